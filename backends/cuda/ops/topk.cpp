// topk on CUDA (backends/cuda/reduce.cuh), float x: k rounds of a group reduction along one
// axis, or for long contiguous rows and small k warps picking per segment in levels (scratch).
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/reduce.cuh"
#include "backends/cuda/strided.h"

namespace kiln {

namespace {

class TopkKernel : public Kernel {
 public:
  explicit TopkKernel(CudaKernelContext& c)
      : axis_(c.node.attrs.get_int("axis")), largest_(c.node.attrs.get_int("largest") != 0) {}
  size_t workspace_bytes(const KernelArgs& a, int) const override { return cuda::topk_workspace_bytes(args(a)); }
  void run(const KernelArgs& a, int) override { cuda::launch_topk(args(a), stream_of(a)); }

 private:
  cuda::TopkArgs args(const KernelArgs& a) const {
    const TensorRef& x = a.inputs[0];
    const int axis = normalize_axis(axis_, x.shape.size(), "[topk] " + a.node->name);
    cuda::TopkArgs p;
    p.x = x.data;
    p.type = x.dtype;
    p.values = a.outputs[0].data;
    p.indices = a.outputs[1].as<int64_t>();
    p.view = cuda::axis_view(x.shape, axis);
    p.k = a.outputs[0].shape[axis];
    p.largest = largest_;
    p.workspace = a.workspace;
    return p;
  }

  int64_t axis_;
  bool largest_;
};

bool supports_topk(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 0);
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3;
}

}  // namespace

KILN_REGISTER_CUDA_KERNELS(topk) { registry.add("topk", {supports_topk, make_cuda_kernel<TopkKernel>, supports_topk}); }

}  // namespace kiln
