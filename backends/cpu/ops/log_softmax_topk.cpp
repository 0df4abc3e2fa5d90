// log_softmax_topk on the CPU, the reference: each row's log-probabilities as log_softmax
// computes them (max and sum of exponentials in double), the bans, then the k best as topk
// picks them (a partial sort of the indices, NaN first, ties to the lower index).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/log_softmax_bans.h"

namespace kiln {

namespace {

class LogSoftmaxTopkKernel : public CpuKernel {
 public:
  LogSoftmaxTopkKernel(const Graph&, int, const ConstantLookup&) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const int64_t dim = x.shape.back(), rows = x.numel() / dim, k = a.outputs[0].shape.back();
    const float* in = x.as<const float>();  // float inputs arrive as f32
    float* values = a.outputs[0].as<float>();
    int64_t* indices = a.outputs[1].as<int64_t>();
    const cpu::LogSoftmaxBans bans(a, rows, dim);
    auto greater = [](float p, float q) { return !std::isnan(q) && (std::isnan(p) || p > q); };
#pragma omp parallel
    {
      std::vector<float> scores(static_cast<size_t>(dim));
      std::vector<int64_t> order(static_cast<size_t>(dim));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        cpu::log_softmax_row(in + r * dim, dim, scores.data());
        bans.apply(r, scores.data());
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t p, int64_t q) {
          if (greater(scores[p], scores[q])) return true;
          if (greater(scores[q], scores[p])) return false;
          return p < q;
        });
        for (int64_t j = 0; j < k; ++j) {
          values[r * k + j] = scores[order[j]];
          indices[r * k + j] = order[j];
        }
      }
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(log_softmax_topk) { registry.add("log_softmax_topk", make_cpu_kernel<LogSoftmaxTopkKernel>); }

}  // namespace kiln
