// topk along a contiguous last axis for k up to 64 (a beam search's picks over beams x
// vocabulary): one pass over each slice that keeps its best k in order, so that most values cost
// one comparison with the k-th best so far, made for a block of 64 values at once in vector
// registers: a block that holds nothing better is skipped (one value at a time, a beam search's
// top-k over 32 sources x 4 x 58101 scores took 2.5-5 ms on 2 Zen 4 cores, now 0.7). The
// reference (backends/cpu/ops/topk.cpp) sorts an index array per slice, which over 232k scores a
// source was most of the op's time; it is the spec (the same order: NaN above every number, ties
// to the lower index) and takes every other form, larger k included (the kept list grows
// linearly), through this kernel.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/topk_order.h"

namespace kiln {

namespace {

constexpr int64_t kMaxK = 64;
constexpr int64_t kBlock = 64;  // values compared with the k-th best at once

// Whether any of xs[0, kBlock) ranks before t, a number (NaN ranks above every number).
__attribute__((target_clones("avx512f", "avx2", "default"))) bool any_before(const float* xs, float t, bool largest) {
  int any = 0;
  if (largest) {
#pragma omp simd reduction(| : any)
    for (int64_t i = 0; i < kBlock; ++i) any |= (xs[i] > t) | (xs[i] != xs[i]);
  } else {
#pragma omp simd reduction(| : any)
    for (int64_t i = 0; i < kBlock; ++i) any |= xs[i] < t;
  }
  return any != 0;
}

class FastTopkKernel : public CpuKernel {
 public:
  FastTopkKernel(const Graph& g, int node, const ConstantLookup& c)
      : reference_((*CpuKernelRegistry::instance().find("topk"))(g, node, c)) {
    const Node& n = g.nodes()[node];
    axis_ = n.attrs.get_int("axis");
    largest_ = n.attrs.get_int("largest") != 0;
  }
  std::string describe() const override { return "one pass"; }

  void run(const KernelArgs& a, int batch) override {
    const TensorRef& x = a.inputs[0];
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (rank == 0 || (axis_ != -1 && axis_ != rank - 1) || a.outputs[0].shape.back() > kMaxK ||
        a.outputs[0].shape.back() < 1 || x.shape.back() == 0)
      return reference_->run(a, batch);
    const int64_t dim = x.shape.back(), k = a.outputs[0].shape.back();
    const int64_t rows = x.numel() / dim;
    const float* in = x.as<const float>();
    float* values = a.outputs[0].as<float>();
    int64_t* indices = a.outputs[1].as<int64_t>();
    const bool largest = largest_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) pick(in + r * dim, dim, k, largest, values + r * k, indices + r * k);
  }

 private:
  // Whether value p ranks before value q (topk_order.h). Equal values keep the order they were
  // seen in, which is the order of their indices.
  static bool before(float p, float q, bool largest) {
    return largest ? cpu::ranks_above(p, q) : cpu::ranks_above(q, p);
  }

  // The best k of xs[0, dim) into v and idx, best first; a later index goes after an equal value.
  static void pick(const float* xs, int64_t dim, int64_t k, bool largest, float* v, int64_t* idx) {
    int64_t kept = 0;
    for (int64_t j = 0; j < dim;) {
      const int64_t end = std::min(dim, j + kBlock);
      if (kept == k && end - j == kBlock && !std::isnan(v[k - 1]) && !any_before(xs + j, v[k - 1], largest)) {
        j = end;
        continue;
      }
      for (; j < end; ++j) {
        const float x = xs[j];
        if (kept == k && !before(x, v[k - 1], largest)) continue;
        int64_t at = kept < k ? kept++ : k - 1;
        for (; at > 0 && before(x, v[at - 1], largest); --at) {
          v[at] = v[at - 1];
          idx[at] = idx[at - 1];
        }
        v[at] = x;
        idx[at] = j;
      }
    }
  }

  std::unique_ptr<CpuKernel> reference_;
  int64_t axis_ = -1;
  bool largest_ = true;
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(topk) { registry.add_fast("topk", make_cpu_kernel<FastTopkKernel>); }

}  // namespace kiln
