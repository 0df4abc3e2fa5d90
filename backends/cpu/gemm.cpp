#include "backends/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kiln::cpu {

void gemm_xwt(const float* x, const float* w, float* y, int64_t rows, int in, int out) {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
  int threads = 1;
#ifdef _OPENMP
  // Row blocks under ~32 rows make poor GEMMs; use fewer threads for small problems.
  threads = static_cast<int>(std::clamp<int64_t>(rows / 32, 1, omp_get_max_threads()));
#endif
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    int64_t begin = rows * t / threads, end = rows * (t + 1) / threads;
    if (end > begin)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(end - begin), out, in, 1.0f, x + begin * in,
                  in, w, in, 0.0f, y + begin * out, out);
  }
}

}  // namespace kiln::cpu
