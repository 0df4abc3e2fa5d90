// attention on the CPU: one query row at a time, scores, softmax and the weighted sum of values
// in double; keys a row may not see (past kv_length, or after it under causal) are skipped, so a
// row that sees none, or only -inf mask entries, gives zeros.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/attention_inputs.h"
#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class AttentionKernel : public CpuKernel {
 public:
  AttentionKernel(const Graph& g, int node, const ConstantLookup&) : attrs_(cpu::attention_attrs(g, node)) {}
  void run(const KernelArgs& a, int) override {
    const cpu::AttentionRows rows(a, attrs_);
    const int64_t d = rows.d(), dv = rows.dv(), ms = rows.mask_stride();
    const double scale = rows.scale();
    float* py = a.outputs[0].as<float>();
#pragma omp parallel
    {
      std::vector<double> p(static_cast<size_t>(rows.sk())), acc(static_cast<size_t>(dv));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows.count(); ++r) {
        const cpu::AttentionRows::Row x = rows.row(r);
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < x.seen; ++j) {
          double dot = 0;
          const float* k = x.key(j);
          for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(x.q[c]) * k[c];
          p[j] = scale * dot + (x.mask ? x.mask[j * ms] : 0.0);
          max = std::max(max, p[j]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        if (max != -std::numeric_limits<double>::infinity()) {
          double sum = 0;
          for (int64_t j = 0; j < x.seen; ++j) sum += p[j] = std::exp(p[j] - max);
          for (int64_t j = 0; j < x.seen; ++j) {
            const float* v = x.value(j);
            for (int64_t c = 0; c < dv; ++c) acc[c] += p[j] * v[c];
          }
          for (double& y : acc) y /= sum;
        }
        for (int64_t c = 0; c < dv; ++c) py[r * dv + c] = static_cast<float>(acc[c]);
      }
    }
  }

 private:
  cpu::AttentionAttrs attrs_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(attention) { registry.add("attention", make_cpu_kernel<AttentionKernel>); }

}  // namespace kiln
