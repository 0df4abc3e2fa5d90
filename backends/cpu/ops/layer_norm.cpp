// layer_norm on the CPU (backends/cpu/layer_norm.h).
#include "backends/cpu/layer_norm.h"
#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class LayerNormKernel : public CpuKernel {
 public:
  LayerNormKernel(const Graph& g, int node, const ConstantLookup&) : eps_(g.nodes()[node].attrs.get_float("eps")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const float* gamma = a.inputs.size() > 1 ? a.inputs[1].as<const float>() : nullptr;
    const float* beta = a.inputs.size() > 2 ? a.inputs[2].as<const float>() : nullptr;
    const int64_t d = x.shape.back(), rows = x.numel() / d;
    cpu::layer_norm_rows(x.as<const float>(), gamma, beta, rows, d, eps_, a.outputs[0].as<float>());
  }

 private:
  double eps_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(layer_norm) { registry.add("layer_norm", make_cpu_kernel<LayerNormKernel>); }

}  // namespace kiln
