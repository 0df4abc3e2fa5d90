// log_softmax on the CPU: each row's max and sum of exponentials in double, then the bans
// (every banned index checked first).
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

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
    const TensorRef* banned = a.inputs.size() > 1 && a.inputs[1].data ? &a.inputs[1] : nullptr;
    const int64_t per_row = banned ? banned->shape.back() : 0;
    std::vector<int64_t> bans(static_cast<size_t>(rows * per_row));
    for (size_t i = 0; i < bans.size(); ++i) {
      bans[i] = banned->dtype == DType::I32 ? banned->as<const int32_t>()[i] : banned->as<const int64_t>()[i];
      KILN_CHECK(bans[i] < dim, "[log_softmax] {}: banned index {} is past the {} scores", a.node->name, bans[i], dim);
    }
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = in + r * dim;
      double max = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < dim; ++j) max = std::max(max, static_cast<double>(xr[j]));
      for (int64_t j = 0; j < dim; ++j) sum += std::exp(xr[j] - max);
      const double log_sum = max + std::log(sum);
      for (int64_t j = 0; j < dim; ++j) out[r * dim + j] = static_cast<float>(xr[j] - log_sum);
      for (int64_t b = 0; b < per_row; ++b)
        if (bans[r * per_row + b] >= 0) out[r * dim + bans[r * per_row + b]] = -std::numeric_limits<float>::infinity();
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(log_softmax) { registry.add("log_softmax", make_cpu_kernel<LogSoftmaxKernel>); }

}  // namespace kiln
