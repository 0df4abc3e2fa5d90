// gather on the GPU: rows of any element type copied by i32 or i64 index (indexed_copy.cu).
// Indices are untrusted (token ids): one out of range gives a row of zeros and sets the error
// word, so that the run fails as it does on the CPU.
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/indexed_copy.cuh"
#include "core/dtype.h"

namespace kiln {

namespace {

bool supports_gather(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 1);
  return t == DType::I32 || t == DType::I64;
}

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(CudaKernelContext& c)
      : axis_(c.node.attrs.get_int("axis")), batch_dims_(c.node.attrs.get_int("batch_dims")), error_(c.error_word) {
    c.checks_inputs = true;
  }

  void run(const KernelArgs& a, int) override {
    const TensorRef &data = a.inputs[0], &indices = a.inputs[1];
    const int axis = normalize_axis(axis_, data.shape.size(), "[gather] " + a.node->name);
    cuda::GatherArgs g;
    g.data = data.data;
    g.out = a.outputs[0].data;
    g.indices = indices.data;
    g.index_type = indices.dtype;
    g.outer = 1;
    int64_t groups = 1;
    g.row_bytes = static_cast<int64_t>(dtype_size(data.dtype));
    for (int d = 0; d < axis; ++d) g.outer *= data.shape[d];
    for (int64_t d = 0; d < batch_dims_; ++d) groups *= data.shape[d];
    for (size_t d = axis + 1; d < data.shape.size(); ++d) g.row_bytes *= data.shape[d];
    if (g.outer == 0 || groups == 0 || indices.numel() == 0) return;
    g.outer_per_group = g.outer / groups;
    g.dim = data.shape[axis];
    g.count = indices.numel() / groups;
    g.error = error_;
    g.error_bit = kCudaIndexOutOfRange;
    cuda::launch_gather(g, stream_of(a));
  }

 private:
  int64_t axis_, batch_dims_;
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(gather) {
  registry.add("gather", {supports_gather, make_cuda_kernel<GatherKernel>, supports_gather});
}

}  // namespace kiln
