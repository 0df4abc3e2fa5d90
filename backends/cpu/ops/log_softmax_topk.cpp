// log_softmax_topk on the CPU, the reference: each row's log-probabilities as log_softmax
// computes them (max and sum of exponentials in double), the bans, then the k best as topk
// picks them (topk_order.h: NaN first, ties to the lower index).
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/log_softmax_bans.h"
#include "backends/cpu/topk_order.h"

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
#pragma omp parallel
    {
      std::vector<float> scores(static_cast<size_t>(dim));
      std::vector<int64_t> order;
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        cpu::log_softmax_row(in + r * dim, dim, scores.data());
        bans.apply(r, scores.data());
        cpu::k_best([&](int64_t j) { return scores[j]; }, dim, k, true, order);
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
