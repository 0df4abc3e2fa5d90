// relu, silu, sigmoid, tanh, gelu (either approximation) on CUDA: the generic elementwise kernel
// (backends/cuda/unary.cuh), any float type, fp32 math.
#include "graph/ops/activation.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/unary.cuh"

namespace kiln {

namespace {

class ActivationKernel : public Kernel {
 public:
  // cuda::Act lists the functions in kiln::Activation's order.
  explicit ActivationKernel(CudaKernelContext& c) : act_(static_cast<cuda::Act>(node_activation(c.node))) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    cuda::launch_activation(act_, x.dtype, x.data, y.data, y.numel(), stream_of(a));
  }

 private:
  cuda::Act act_;
};

bool supports_activation(const Graph& g, const Node& n) {
  return io_types_in(g, n, {DType::F32, DType::F16, DType::BF16, DType::F8E4M3});
}

}  // namespace

KILN_REGISTER_CUDA_KERNELS(activation) {
  for (const char* op : {"relu", "silu", "sigmoid", "tanh", "gelu"})
    registry.add(op, {supports_activation, make_cuda_kernel<ActivationKernel>, supports_activation});
}

}  // namespace kiln
