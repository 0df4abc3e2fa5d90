// rms_norm on the CPU: per row, the mean square in double.
#include <cmath>

#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class RmsNormKernel : public CpuKernel {
 public:
  RmsNormKernel(const Graph& g, int node, const ConstantLookup&) : eps_(g.nodes()[node].attrs.get_float("eps")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const float* gamma = a.inputs.size() > 1 ? a.inputs[1].as<const float>() : nullptr;
    const int64_t d = x.shape.back(), rows = x.numel() / d;
    const float* in = x.as<const float>();
    float* out = a.outputs[0].as<float>();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = in + r * d;
      double sq = 0;
      for (int64_t i = 0; i < d; ++i) sq += static_cast<double>(xr[i]) * xr[i];
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps_);
      for (int64_t i = 0; i < d; ++i) out[r * d + i] = static_cast<float>(xr[i] * inv * (gamma ? gamma[i] : 1.0));
    }
  }

 private:
  double eps_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(rms_norm) { registry.add("rms_norm", make_cpu_kernel<RmsNormKernel>); }

}  // namespace kiln
