// cast on CUDA: the generic elementwise conversion (backends/cuda/cast.cuh) between any two
// element types, with the CPU reference's numerics.
#include "backends/cuda/cast.cuh"
#include "backends/cuda/cuda_kernel.h"

namespace kiln {

namespace {

class CastKernel : public Kernel {
 public:
  explicit CastKernel(CudaKernelContext&) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    cuda::launch_cast(x.dtype, y.dtype, x.data, y.data, y.numel(), stream_of(a));
  }
};

bool supports_cast(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(cast) { registry.add("cast", {supports_cast, make_cuda_kernel<CastKernel>, supports_cast}); }

}  // namespace kiln
