// layer_norm vectorised (the reference, backends/cpu/ops/layer_norm.cpp, is the spec): per row the
// mean, then the variance about it (two passes, as there), both summed in double by `omp simd`
// loops, the normalisation in float; rows over the threads.
#include <cmath>

#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

__attribute__((target_clones("avx512f", "avx2", "default"))) void layer_norm_row(const float* __restrict x,
                                                                                 const float* __restrict gamma,
                                                                                 const float* __restrict beta,
                                                                                 float eps, int64_t d,
                                                                                 float* __restrict y) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < d; ++i) sum += x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(d));
  double squares = 0;
#pragma omp simd reduction(+ : squares)
  for (int64_t i = 0; i < d; ++i) squares += (x[i] - mean) * (x[i] - mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(d) + eps));
#pragma omp simd
  for (int64_t i = 0; i < d; ++i) y[i] = (x[i] - mean) * inv * (gamma ? gamma[i] : 1.0f) + (beta ? beta[i] : 0.0f);
}

class FastLayerNormKernel : public CpuKernel {
 public:
  FastLayerNormKernel(const Graph& g, int node, const ConstantLookup&)
      : eps_(static_cast<float>(g.nodes()[node].attrs.get_float("eps"))) {}
  std::string describe() const override { return "simd"; }

  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const float* gamma = a.inputs.size() > 1 ? a.inputs[1].as<const float>() : nullptr;
    const float* beta = a.inputs.size() > 2 ? a.inputs[2].as<const float>() : nullptr;
    const int64_t d = x.shape.back(), rows = d ? x.numel() / d : 0;
    const float* in = x.as<const float>();
    float* out = a.outputs[0].as<float>();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) layer_norm_row(in + r * d, gamma, beta, eps_, d, out + r * d);
  }

 private:
  float eps_;
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(layer_norm) { registry.add_fast("layer_norm", make_cpu_kernel<FastLayerNormKernel>); }

}  // namespace kiln
