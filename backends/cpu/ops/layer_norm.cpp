// layer_norm on the CPU: per row, the mean and then the variance about it in double (two
// passes: no cancellation when the mean is large against the spread).
#include <cmath>

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
    const float* in = x.as<const float>();
    float* out = a.outputs[0].as<float>();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = in + r * d;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < d; ++i) mean += xr[i];
      mean /= static_cast<double>(d);
      for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      const double inv = 1.0 / std::sqrt(var / static_cast<double>(d) + eps_);
      for (int64_t i = 0; i < d; ++i) {
        const double y = (xr[i] - mean) * inv * (gamma ? gamma[i] : 1.0) + (beta ? beta[i] : 0.0);
        out[r * d + i] = static_cast<float>(y);
      }
    }
  }

 private:
  double eps_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(layer_norm) { registry.add("layer_norm", make_cpu_kernel<LayerNormKernel>); }

}  // namespace kiln
