// rms_norm on the GPU: a block per row, the mean square in fp32 (norm.cu); x f32 or f16, gamma
// optional, f32 or f16.
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/norm.cuh"

namespace kiln {

namespace {

enum : int { X = 0, Gamma };

bool supports_rms_norm(const Graph& g, const Node& n) { return io_types_in(g, n, {DType::F32, DType::F16}); }

class RmsNormKernel : public Kernel {
 public:
  explicit RmsNormKernel(CudaKernelContext& c) : eps_(static_cast<float>(c.node.attrs.get_float("eps"))) {}

  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[X];
    cuda::NormArgs p = cuda::norm_rows(x.data, a.outputs[0].data, x.dtype, x.numel(), x.shape.back(), eps_);
    if (a.inputs.size() > Gamma && a.inputs[Gamma].data) {
      p.gamma = a.inputs[Gamma].data;
      p.gamma_type = a.inputs[Gamma].dtype;
    }
    cuda::launch_rms_norm(p, stream_of(a));
  }

 private:
  float eps_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(rms_norm) {
  registry.add("rms_norm", {supports_rms_norm, make_cuda_kernel<RmsNormKernel>, supports_rms_norm});
}

}  // namespace kiln
