#include "backends/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kiln::cpu {

namespace {

constexpr int64_t kVectorRows = 8;      // up to this many rows: matrix-vector products
constexpr int64_t kRowsPerThread = 32;  // row blocks under this make poor GEMMs
constexpr int kColumnsPerThread = 64;   // fewer output columns per thread cost more than they save

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace

// Fewer rows than outputs (a decoder step, beams included) are split by output columns, so that
// every thread walks, and OpenBLAS packs, only its own block of the weights: split by rows, each
// thread would pack all of them, and few rows would leave threads idle. Up to kVectorRows rows
// are matrix-vector products, since sgemm packs its weight block on every call, which for a row
// or two costs more than the product. More rows than outputs (a convolution's pixels) are split
// by rows.
void gemm_xwt(const float* x, const float* w, float* y, int64_t rows, int in, int out) {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
  if (rows <= kVectorRows || rows < out) {
    const int threads = std::clamp(out / kColumnsPerThread, 1, max_threads());
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int begin = static_cast<int>(static_cast<int64_t>(out) * t / threads);
      const int end = static_cast<int>(static_cast<int64_t>(out) * (t + 1) / threads);
      if (end <= begin) continue;
      if (rows <= kVectorRows) {
        for (int64_t r = 0; r < rows; ++r)
          cblas_sgemv(CblasRowMajor, CblasNoTrans, end - begin, in, 1.0f, w + static_cast<int64_t>(begin) * in, in,
                      x + r * in, 1, 0.0f, y + r * out + begin, 1);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), end - begin, in, 1.0f, x, in,
                    w + static_cast<int64_t>(begin) * in, in, 0.0f, y + begin, out);
      }
    }
    return;
  }
  const int threads = static_cast<int>(std::clamp<int64_t>(rows / kRowsPerThread, 1, max_threads()));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = rows * t / threads, end = rows * (t + 1) / threads;
    if (end > begin)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(end - begin), out, in, 1.0f, x + begin * in,
                  in, w, in, 0.0f, y + begin * out, out);
  }
}

}  // namespace kiln::cpu
