// argmax on CUDA: the generic group reduction along one axis (backends/cuda/reduce.cuh), float
// or integer x.
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/reduce.cuh"
#include "backends/cuda/strided.h"

namespace kiln {

namespace {

class ArgmaxKernel : public Kernel {
 public:
  explicit ArgmaxKernel(CudaKernelContext& c) : axis_(c.node.attrs.get_int("axis")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int axis = normalize_axis(axis_, x.shape.size(), "[argmax] " + a.node->name);
    cuda::launch_argmax(x.data, x.dtype, y.as<int64_t>(), cuda::axis_view(x.shape, axis), stream_of(a));
  }

 private:
  int64_t axis_;
};

bool supports_argmax(const Graph& g, const Node& n) {
  return io_types_in(g, n, {DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::I32, DType::I64});
}

}  // namespace

KILN_REGISTER_CUDA_KERNELS(argmax) {
  registry.add("argmax", {supports_argmax, make_cuda_kernel<ArgmaxKernel>, supports_argmax});
}

}  // namespace kiln
