#include "backends/cpu/gemv.h"

#include <algorithm>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "core/half.h"

namespace kiln::cpu {

namespace {

constexpr int64_t kColumns = 64;  // per task: a 64 x in block of the weights
// Fewer multiply-adds than this run on the calling thread: a squeeze-excite block's layers (at
// most 1152 x 48 in an image classifier) take about a microsecond there, less than an OpenMP
// region's fork and join (3 us on 2 threads, more on 16).
constexpr int64_t kParallelMacs = int64_t{1} << 16;

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

// The half-weight columns. GCC does not vectorise a half-to-float conversion in a reduction
// loop, so the x86 versions convert 16 (AVX-512) or 8 (F16C) weights per instruction by hand,
// with two accumulators so that consecutive multiply-adds do not wait on each other. One column
// at a time, so the weights stream in address order: four columns at once (sharing the loads of
// x) made an opus-mt-en-de decoder step take 4.6 ms instead of 2.5 on 2 Zen 4 cores.
float dot_f16_tail(const float* x, const uint16_t* w, int64_t begin, int64_t in, float s) {
  for (int64_t k = begin; k < in; ++k) s += x[k] * half_to_float(w[k]);
  return s;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void columns_f16_avx512(const float* x, const uint16_t* w, float* y, int64_t rows,
                                                           int64_t in, int64_t out, int64_t begin, int64_t end) {
  const int64_t pairs = in / 32 * 32, vectors = in / 16 * 16;
  for (int64_t n = begin; n < end; ++n) {
    const uint16_t* wn = w + n * in;
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * in;
      __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
      for (int64_t k = 0; k < pairs; k += 32) {
        const __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wn + k)));
        const __m512 w1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wn + k + 16)));
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xr + k), w0, a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xr + k + 16), w1, a1);
      }
      if (vectors > pairs) {
        const __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wn + pairs)));
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xr + pairs), w0, a0);
      }
      y[r * out + n] = dot_f16_tail(xr, wn, vectors, in, _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)));
    }
  }
}

__attribute__((target("avx2,f16c,fma"))) void columns_f16_avx2(const float* x, const uint16_t* w, float* y,
                                                               int64_t rows, int64_t in, int64_t out, int64_t begin,
                                                               int64_t end) {
  const int64_t pairs = in / 16 * 16, vectors = in / 8 * 8;
  for (int64_t n = begin; n < end; ++n) {
    const uint16_t* wn = w + n * in;
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * in;
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
      for (int64_t k = 0; k < pairs; k += 16) {
        const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wn + k)));
        const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wn + k + 8)));
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xr + k), w0, a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(xr + k + 8), w1, a1);
      }
      if (vectors > pairs) {
        const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wn + pairs)));
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xr + pairs), w0, a0);
      }
      const __m256 a = _mm256_add_ps(a0, a1);
      const __m128 h = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
      const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
      y[r * out + n] = dot_f16_tail(xr, wn, vectors, in, _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q))));
    }
  }
}

#endif

void columns_f16_scalar(const float* x, const uint16_t* w, float* y, int64_t rows, int64_t in, int64_t out,
                        int64_t begin, int64_t end) {
  for (int64_t n = begin; n < end; ++n)
    for (int64_t r = 0; r < rows; ++r) y[r * out + n] = dot_f16_tail(x + r * in, w + n * in, 0, in, 0.0f);
}

using ColumnsF16 = void (*)(const float*, const uint16_t*, float*, int64_t, int64_t, int64_t, int64_t, int64_t);

ColumnsF16 columns_f16() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return columns_f16_avx512;  // every AVX-512 CPU has F16C
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // F16C is CPUID leaf 1's ECX bit (not a builtin name in clang)
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return columns_f16_avx2;
#endif
  return columns_f16_scalar;
}

}  // namespace

void gemv_rows(const float* x, const float* w, float* y, int64_t rows, int64_t in, int64_t out) {
  const int64_t tasks = (out + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) if (tasks > 1 && rows * in * out >= kParallelMacs)
  for (int64_t t = 0; t < tasks; ++t) columns(x, w, y, rows, in, out, t * kColumns, std::min(out, (t + 1) * kColumns));
}

void gemv_rows_f16(const float* x, const uint16_t* w, float* y, int64_t rows, int64_t in, int64_t out) {
  static const ColumnsF16 f = columns_f16();
  const int64_t tasks = (out + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) if (tasks > 1 && rows * in * out >= kParallelMacs)
  for (int64_t t = 0; t < tasks; ++t) f(x, w, y, rows, in, out, t * kColumns, std::min(out, (t + 1) * kColumns));
}

}  // namespace kiln::cpu
