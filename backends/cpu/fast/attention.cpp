// attention in float, vectorised (the reference, backends/cpu/ops/attention.cpp, is the spec: it
// works in double with libm's scalar exp, which made attention and exp a fifth of a beam-search
// step). Same semantics: one query row at a time, keys past kv_length (or after the row under
// causal) skipped, a row that sees none or only -inf mask entries gives zeros; rows over the
// threads. Scores, exponentials (cpu::exp_approx) and the weighted sum of values run as `omp simd`
// loops built for AVX-512, AVX2 and the baseline.
//
// Scores two ways. A decoder step (one query row per key head) takes a dot product per key. Where
// many rows share a head's keys (an encoder, a detector's attention over 400 cells) the keys are
// transposed once to [B, Hkv, D, Sk] and a row's scores run along the keys, a vector of keys a
// step: a dot product per key ends in a horizontal sum, which over 32-wide heads cost more than
// the products (a detector's attention layer took 6% of its time on the CPU). Sums over a block
// of 64 keys or value components stay in registers across the inner loop.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/activation.h"
#include "backends/cpu/attention_inputs.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/scratch.h"

namespace kiln {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// p[j] = scale * q.k_j + mask_j over the row's keys, a dot product per key.
__attribute__((target_clones("avx512f", "avx2", "default"))) void scores_by_key(const cpu::AttentionRows::Row& x,
                                                                                int64_t mask_stride, float scale,
                                                                                int64_t d, float* __restrict p) {
  const float* __restrict q = x.q;
  for (int64_t j = 0; j < x.seen; ++j) {
    const float* __restrict kj = x.key(j);
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < d; ++c) dot += q[c] * kj[c];
    p[j] = scale * dot + (x.mask ? x.mask[j * mask_stride] : 0.0f);
  }
}

// The same from the row's head's keys transposed: kt[c * sk + j] is component c of key j.
constexpr int64_t kBlock = 64;

__attribute__((target_clones("avx512f", "avx2", "default"))) void scores_by_dim(const cpu::AttentionRows::Row& x,
                                                                                const float* __restrict kt, int64_t sk,
                                                                                int64_t mask_stride, float scale,
                                                                                int64_t d, float* __restrict p) {
  const float* __restrict q = x.q;
  const int64_t seen = x.seen;
  int64_t j0 = 0;
  for (; j0 + kBlock <= seen; j0 += kBlock) {
    float acc[kBlock] = {};
    for (int64_t c = 0; c < d; ++c) {
      const float qc = q[c];
      const float* __restrict row = kt + c * sk + j0;
#pragma omp simd
      for (int64_t j = 0; j < kBlock; ++j) acc[j] += qc * row[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < kBlock; ++j) p[j0 + j] = acc[j];
  }
  for (int64_t j = j0; j < seen; ++j) p[j] = 0.0f;
  for (int64_t c = 0; c < d; ++c) {
    const float qc = q[c];
    const float* __restrict row = kt + c * sk;
#pragma omp simd
    for (int64_t j = j0; j < seen; ++j) p[j] += qc * row[j];
  }
  if (x.mask) {
    for (int64_t j = 0; j < seen; ++j) p[j] = scale * p[j] + x.mask[j * mask_stride];
  } else {
#pragma omp simd
    for (int64_t j = 0; j < seen; ++j) p[j] *= scale;
  }
}

// y = softmax(p) V over the row's keys; zeros where every score is -inf.
__attribute__((target_clones("avx512f", "avx2", "default"))) void weigh_values(const cpu::AttentionRows::Row& x,
                                                                               int64_t dv, float* __restrict p,
                                                                               float* __restrict y) {
  const int64_t seen = x.seen;
  float max = kNegInf;
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < seen; ++j) max = p[j] > max ? p[j] : max;
  for (int64_t c = 0; c < dv; ++c) y[c] = 0.0f;
  if (max == kNegInf) return;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < seen; ++j) {
    const float e = cpu::exp_approx(p[j] - max);  // clamped at -87: a -inf mask entry must weigh nothing
    p[j] = p[j] == kNegInf ? 0.0f : e;
    sum += p[j];
  }
  int64_t c0 = 0;
  if (!x.from)  // values in one place (x.value(j)'s test per key kept the loop from vectorising)
    for (; c0 + kBlock <= dv; c0 += kBlock) {
      float acc[kBlock] = {};
      const float* __restrict v = x.v + c0;
      for (int64_t j = 0; j < seen; ++j) {
        const float pj = p[j];
#pragma omp simd
        for (int64_t c = 0; c < kBlock; ++c) acc[c] += pj * v[j * dv + c];
      }
#pragma omp simd
      for (int64_t c = 0; c < kBlock; ++c) y[c0 + c] = acc[c];
    }
  for (int64_t j = 0; j < seen && c0 < dv; ++j) {
    const float* __restrict vj = x.value(j);
    const float pj = p[j];
#pragma omp simd
    for (int64_t c = c0; c < dv; ++c) y[c] += pj * vj[c];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t c = 0; c < dv; ++c) y[c] *= inv;
}

// K [heads, sk, d] -> [heads, d, sk].
void transpose_keys(const float* k, float* kt, int64_t heads, int64_t sk, int64_t d) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t c = 0; c < d; ++c)
      for (int64_t j = 0; j < sk; ++j) kt[(h * d + c) * sk + j] = k[(h * sk + j) * d + c];
}

class FastAttentionKernel : public CpuKernel {
 public:
  FastAttentionKernel(const Graph& g, int node, const ConstantLookup&) : attrs_(cpu::attention_attrs(g, node)) {}
  std::string describe() const override { return "simd"; }

  void run(const KernelArgs& a, int) override {
    const cpu::AttentionRows rows(a, attrs_);
    const float scale = static_cast<float>(rows.scale());
    const int64_t sk = rows.sk(), d = rows.d(), mask_stride = rows.mask_stride();
    float* py = a.outputs[0].as<float>();
    // Transposing costs a pass over the keys: worth it once several rows read them.
    const float* kt = nullptr;
    if (!rows.gathers_rows() && rows.rows_per_kv_head() >= 8) {
      const int64_t heads = rows.batch() * rows.kv_heads();
      auto* buffer =
          static_cast<float*>(cpu::scratch(cpu::Scratch::Input, static_cast<size_t>(heads * sk * d) * sizeof(float)));
      transpose_keys(rows.keys(), buffer, heads, sk, d);
      kt = buffer;
    }
#pragma omp parallel
    {
      std::vector<float> p(static_cast<size_t>(sk));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows.count(); ++r) {
        const cpu::AttentionRows::Row x = rows.row(r);
        if (kt)  // the row's head starts where its keys do in K: both layouts hold D x Sk per head
          scores_by_dim(x, kt + (x.k - rows.keys()), sk, mask_stride, scale, d, p.data());
        else
          scores_by_key(x, mask_stride, scale, d, p.data());
        weigh_values(x, rows.dv(), p.data(), py + r * rows.dv());
      }
    }
  }

 private:
  cpu::AttentionAttrs attrs_;
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(attention) { registry.add_fast("attention", make_cpu_kernel<FastAttentionKernel>); }

}  // namespace kiln
