// layer_norm on the GPU: a block or a warp per row, fp32 statistics (norm.cu); x f32 or f16, gamma and
// beta optional, each f32 or f16.
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/norm.cuh"

namespace kiln {

namespace {

enum : int { X = 0, Gamma, Beta };

bool supports_layer_norm(const Graph& g, const Node& n) { return io_types_in(g, n, {DType::F32, DType::F16}); }

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(CudaKernelContext& c) : eps_(static_cast<float>(c.node.attrs.get_float("eps"))) {}

  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[X];
    cuda::NormArgs p = cuda::norm_rows(x.data, a.outputs[0].data, x.dtype, x.numel(), x.shape.back(), eps_);
    if (a.inputs.size() > Gamma && a.inputs[Gamma].data) {
      p.gamma = a.inputs[Gamma].data;
      p.gamma_type = a.inputs[Gamma].dtype;
    }
    if (a.inputs.size() > Beta && a.inputs[Beta].data) {
      p.beta = a.inputs[Beta].data;
      p.beta_type = a.inputs[Beta].dtype;
    }
    p.params_settled = (!p.gamma || a.inputs[Gamma].settled) && (!p.beta || a.inputs[Beta].settled);
    cuda::launch_layer_norm(p, stream_of(a));
  }

 private:
  float eps_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(layer_norm) {
  registry.add("layer_norm", {supports_layer_norm, make_cuda_kernel<LayerNormKernel>, supports_layer_norm});
}

}  // namespace kiln
