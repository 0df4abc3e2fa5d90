// log_softmax on the CPU: each row's max and sum of exponentials in double, then the bans
// (every banned index checked first).
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/log_softmax_bans.h"

namespace kiln {

namespace {

class LogSoftmaxKernel : public CpuKernel {
 public:
  LogSoftmaxKernel(const Graph&, int, const ConstantLookup&) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int64_t dim = x.shape.back(), rows = x.numel() / dim;
    const float* in = x.as<const float>();  // float inputs arrive as f32
    float* out = y.as<float>();
    const cpu::LogSoftmaxBans bans(a, rows, dim);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = in + r * dim;
      double max = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < dim; ++j) max = std::max(max, static_cast<double>(xr[j]));
      for (int64_t j = 0; j < dim; ++j) sum += std::exp(xr[j] - max);
      const double log_sum = max + std::log(sum);
      for (int64_t j = 0; j < dim; ++j) out[r * dim + j] = static_cast<float>(xr[j] - log_sum);
      bans.apply(r, out + r * dim);
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(log_softmax) { registry.add("log_softmax", make_cpu_kernel<LogSoftmaxKernel>); }

}  // namespace kiln
