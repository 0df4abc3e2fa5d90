// attention in float, vectorised (the reference, backends/cpu/ops/attention.cpp, is the spec: it
// works in double with libm's scalar exp, which made attention and exp a fifth of a beam-search
// step). Same semantics: one query row at a time, keys past kv_length (or after the row under
// causal) skipped, a row that sees none or only -inf mask entries gives zeros; rows over the
// threads. Dot products and the weighted sum of values run as `omp simd` loops, the exponentials
// on cpu::exp_approx, all built for AVX-512, AVX2 and the baseline.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/activation.h"
#include "backends/cpu/attention_inputs.h"
#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

// One query row: y[dv] = softmax(scale * q.K^T + mask) V over the first `seen` keys. `p` holds
// `seen` floats of scratch; `mask_stride` steps along the keys (0: one value for all).
__attribute__((target_clones("avx512f", "avx2", "default"))) void attend_row(const cpu::AttentionRows::Row& x,
                                                                             int64_t mask_stride, float scale,
                                                                             int64_t d, int64_t dv, float* __restrict p,
                                                                             float* __restrict y) {
  const float* __restrict q = x.q;
  const float* mask = x.mask;
  const int64_t seen = x.seen;
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < seen; ++j) {
    const float* __restrict kj = x.key(j);
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < d; ++c) dot += q[c] * kj[c];
    p[j] = scale * dot + (mask ? mask[j * mask_stride] : 0.0f);
    max = std::max(max, p[j]);
  }
  for (int64_t c = 0; c < dv; ++c) y[c] = 0.0f;
  if (max == -std::numeric_limits<float>::infinity()) return;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < seen; ++j) {
    const float e = cpu::exp_approx(p[j] - max);  // clamped at -87: a -inf mask entry must weigh nothing
    p[j] = p[j] == -std::numeric_limits<float>::infinity() ? 0.0f : e;
    sum += p[j];
  }
  for (int64_t j = 0; j < seen; ++j) {
    const float* __restrict vj = x.value(j);
    const float pj = p[j];
#pragma omp simd
    for (int64_t c = 0; c < dv; ++c) y[c] += pj * vj[c];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t c = 0; c < dv; ++c) y[c] *= inv;
}

class FastAttentionKernel : public CpuKernel {
 public:
  FastAttentionKernel(const Graph& g, int node, const ConstantLookup&) : attrs_(cpu::attention_attrs(g, node)) {}
  std::string describe() const override { return "simd"; }

  void run(const KernelArgs& a, int) override {
    const cpu::AttentionRows rows(a, attrs_);
    const float scale = static_cast<float>(rows.scale());
    float* py = a.outputs[0].as<float>();
#pragma omp parallel
    {
      std::vector<float> p(static_cast<size_t>(rows.sk()));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows.count(); ++r) {
        const cpu::AttentionRows::Row x = rows.row(r);
        attend_row(x, rows.mask_stride(), scale, rows.d(), rows.dv(), p.data(), py + r * rows.dv());
      }
    }
  }

 private:
  cpu::AttentionAttrs attrs_;
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(attention) { registry.add_fast("attention", make_cpu_kernel<FastAttentionKernel>); }

}  // namespace kiln
