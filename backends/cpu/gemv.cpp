#include "backends/cpu/gemv.h"

#include <algorithm>

namespace kiln::cpu {

namespace {

// Output columns [begin, end): each weight row is read once per x row while it is in L1, the
// dot products vectorised by `omp simd` (which allows their reassociation).
__attribute__((target_clones("avx512f", "avx2", "default"))) void columns(const float* x, const float* w, float* y,
                                                                          int64_t rows, int64_t in, int64_t out,
                                                                          int64_t begin, int64_t end) {
  for (int64_t n = begin; n < end; ++n) {
    const float* __restrict wn = w + n * in;
    for (int64_t r = 0; r < rows; ++r) {
      const float* __restrict xr = x + r * in;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int64_t k = 0; k < in; ++k) s += xr[k] * wn[k];
      y[r * out + n] = s;
    }
  }
}

}  // namespace

void gemv_rows(const float* x, const float* w, float* y, int64_t rows, int64_t in, int64_t out) {
  constexpr int64_t kColumns = 64;  // per task: a 64 x in block of the weights
  const int64_t tasks = (out + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tasks; ++t) columns(x, w, y, rows, in, out, t * kColumns, std::min(out, (t + 1) * kColumns));
}

}  // namespace kiln::cpu
