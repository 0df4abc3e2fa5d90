// reduce over contiguous axes (a global pool over H and W, a max over the last axis) in AVX-512
// or AVX2, over the threads. The reference (backends/cpu/ops/reduce.cpp) is the spec and takes
// every other form (integers, axes with others between them); like it, sums are in double in the
// order of the reduced index, so sums and means come out the same, and a max ignores NaN. The
// reference's max goes through double and a branch per element: a detector's best class over 80
// scores per anchor took 3% of its time on the CPU.
#include <algorithm>
#include <limits>
#include <set>

#include "backends/cpu/cpu_kernel.h"
#include "core/error.h"

namespace kiln {

namespace {

// The max of x[0, n) (-inf for none; NaN never wins a comparison).
__attribute__((target_clones("avx512f", "avx2", "default"))) float row_max(const float* __restrict x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// For each of `inner` lanes, the max (or the sum in double) over `count` rows of `inner`.
__attribute__((target_clones("avx512f", "avx2", "default"))) void column_max(const float* __restrict x, int64_t count,
                                                                             int64_t inner, float* __restrict y) {
  for (int64_t i = 0; i < inner; ++i) y[i] = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < count; ++r)
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) y[i] = x[r * inner + i] > y[i] ? x[r * inner + i] : y[i];
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void column_sum(const float* __restrict x, int64_t count,
                                                                             int64_t inner, double* __restrict sum) {
  for (int64_t i = 0; i < inner; ++i) sum[i] = 0;
  for (int64_t r = 0; r < count; ++r)
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) sum[i] += x[r * inner + i];
}

class FastReduceKernel : public CpuKernel {
 public:
  FastReduceKernel(const Graph& g, int node, const ConstantLookup& c)
      : reference_((*CpuKernelRegistry::instance().find("reduce"))(g, node, c)) {
    const Node& n = g.nodes()[node];
    op_ = n.attrs.get_string("op");
    axes_ = n.attrs.get_ints("axes");
  }
  std::string describe() const override { return "simd"; }

  void run(const KernelArgs& a, int batch) override {
    const TensorRef& x = a.inputs[0];
    const int rank = static_cast<int>(x.shape.size());
    std::set<int> axes;
    for (int64_t ax : axes_) axes.insert(normalize_axis(ax, rank, "[reduce] " + a.node->name));
    if (x.dtype != DType::F32 || axes.empty() || *axes.rbegin() - *axes.begin() + 1 != static_cast<int>(axes.size()) ||
        x.numel() == 0)
      return reference_->run(a, batch);
    int64_t outer = 1, count = 1, inner = 1;
    for (int d = 0; d < rank; ++d) (d < *axes.begin() ? outer : d > *axes.rbegin() ? inner : count) *= x.shape[d];
    const float* in = x.as<const float>();
    float* y = a.outputs[0].as<float>();
    if (op_ == "max" && inner == 1) {
#pragma omp parallel for schedule(static)
      for (int64_t o = 0; o < outer; ++o) y[o] = row_max(in + o * count, count);
    } else if (op_ == "max") {
#pragma omp parallel for schedule(static)
      for (int64_t o = 0; o < outer; ++o) column_max(in + o * count * inner, count, inner, y + o * inner);
    } else {
      const bool mean = op_ == "mean";
#pragma omp parallel
      {
        std::vector<double> sum(static_cast<size_t>(inner));
#pragma omp for schedule(static)
        for (int64_t o = 0; o < outer; ++o) {
          column_sum(in + o * count * inner, count, inner, sum.data());
          for (int64_t i = 0; i < inner; ++i)
            y[o * inner + i] = static_cast<float>(mean ? sum[i] / static_cast<double>(count) : sum[i]);
        }
      }
    }
  }

 private:
  std::unique_ptr<CpuKernel> reference_;  // every form this kernel does not take
  std::string op_;
  std::vector<int64_t> axes_;
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(reduce) { registry.add_fast("reduce", make_cpu_kernel<FastReduceKernel>); }

}  // namespace kiln
