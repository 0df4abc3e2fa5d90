// log_softmax in float, vectorised (the reference, backends/cpu/ops/log_softmax.cpp, is the spec:
// its libm exp per element, in double, over a 58101-word vocabulary was most of the op's time in
// a beam-search step). Each row's max and exponentials in float on cpu::exp_approx, their sum in
// double (many thousands of terms), rows over the threads; banned indices as in the reference.
#include <cmath>
#include <limits>

#include "backends/cpu/activation.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/log_softmax_bans.h"

namespace kiln {

namespace {

__attribute__((target_clones("avx512f", "avx2", "default"))) void log_softmax_row(const float* __restrict x,
                                                                                  float* __restrict y, int64_t dim) {
  float max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < dim; ++j) max = x[j] > max ? x[j] : max;
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < dim; ++j) {
    const float e = cpu::exp_approx(x[j] - max);  // clamped at -87: a -inf score must add nothing
    sum += x[j] == -std::numeric_limits<float>::infinity() ? 0.0f : e;
  }
  const float log_sum = static_cast<float>(static_cast<double>(max) + std::log(sum));
#pragma omp simd
  for (int64_t j = 0; j < dim; ++j) y[j] = x[j] - log_sum;
}

class FastLogSoftmaxKernel : public CpuKernel {
 public:
  FastLogSoftmaxKernel(const Graph&, int, const ConstantLookup&) {}
  std::string describe() const override { return "simd"; }

  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int64_t dim = x.shape.back(), rows = dim ? x.numel() / dim : 0;
    const float* in = x.as<const float>();
    float* out = y.as<float>();
    const cpu::LogSoftmaxBans bans(a, rows, dim);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      log_softmax_row(in + r * dim, out + r * dim, dim);
      bans.apply(r, out + r * dim);
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(log_softmax) { registry.add_fast("log_softmax", make_cpu_kernel<FastLogSoftmaxKernel>); }

}  // namespace kiln
