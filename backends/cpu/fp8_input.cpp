#include "backends/cpu/fp8_input.h"

#include <immintrin.h>

#include <algorithm>

#include "core/fp8.h"

namespace kiln::cpu {

namespace {

__attribute__((target("avx512f,f16c"))) void round_avx512(float* x, int64_t begin, int64_t end, float scale) {
  const __m512 inv = _mm512_set1_ps(1.0f / scale), s = _mm512_set1_ps(scale);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), low = _mm512_set1_epi32(0x7ffff),
                keep = _mm512_set1_epi32(~0xfffff), one = _mm512_set1_epi32(1);
  const __m512 magic = _mm512_set1_ps(12582912.0f), k512 = _mm512_set1_ps(512.0f),
               inv512 = _mm512_set1_ps(1.0f / 512.0f), min_normal = _mm512_set1_ps(0.015625f),
               max = _mm512_set1_ps(kE4M3Max);
  for (int64_t i = begin; i < end; i += 16) {
    const __m512 in = _mm512_loadu_ps(x + i);
    // fp16 and back (round to nearest even), then to the layer's scale.
    const __m512 v = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtps_ph(in, _MM_FROUND_TO_NEAREST_INT)), inv);
    const __m512i vbits = _mm512_castps_si512(v);
    const __m512i abits = _mm512_and_si512(vbits, abs_mask);
    const __m512 a = _mm512_castsi512_ps(abits);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(abits, 20), one);
    const __m512 normal =
        _mm512_castsi512_ps(_mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(abits, low), lsb), keep));
    const __m512 subnormal = _mm512_mul_ps(_mm512_sub_ps(_mm512_fmadd_ps(a, k512, magic), magic), inv512);
    __m512 q = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, min_normal, _CMP_LT_OQ), normal, subnormal);
    q = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(q, max, _CMP_GT_OQ), q, max);
    q = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(q), _mm512_andnot_si512(abs_mask, vbits)));
    q = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), q, v);  // NaN stays NaN
    _mm512_storeu_ps(x + i, _mm512_mul_ps(q, s));
  }
}

}  // namespace

void round_fp8_inputs(float* x, int64_t count, float scale, bool is_e4m3) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");  // every AVX-512 CPU has F16C too
  const int64_t vector_end = avx512 && !is_e4m3 ? count / 16 * 16 : 0;
  constexpr int64_t kBlock = 1 << 14;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < vector_end; b += kBlock) round_avx512(x, b, std::min(vector_end, b + kBlock), scale);
#pragma omp parallel for schedule(static)
  for (int64_t e = vector_end; e < count; ++e) x[e] = fp8_layer_input(x[e], scale, is_e4m3);
}

}  // namespace kiln::cpu
