// A top-k entry (a value and its index) as one 64-bit word whose unsigned order is ranked.cuh's
// order, so that ranking entries is comparing plain integers: the high half an order-preserving
// key of the value (NaN above every number, -0 equal to +0; complemented when the smallest rank
// first), the low half the complemented index (ties to the lower index). 0 stands for none (or
// picked): with indices below 2^31 no entry packs to 0. topk_rows.cu and
// log_softmax_topk_block.cu rank with these.
#pragma once

#include <cstdint>

namespace kiln::cuda {

__device__ __forceinline__ uint64_t pack(float v, int64_t index, bool largest) {
  uint32_t k = 0xffffffffu;  // NaN
  if (!isnan(v)) {
    const uint32_t u = __float_as_uint(v == 0.0f ? 0.0f : v);
    k = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  if (!largest) k = ~k;
  return static_cast<uint64_t>(k) << 32 | ~static_cast<uint32_t>(index);
}

__device__ __forceinline__ int64_t index_of(uint64_t e) { return ~static_cast<uint32_t>(e); }

// The value a largest-first word was packed from (-0 comes back as +0, which subtracts alike).
__device__ __forceinline__ float value_of(uint64_t e) {
  const uint32_t k = static_cast<uint32_t>(e >> 32);
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

__device__ __forceinline__ uint64_t warp_max(uint64_t v) {
#pragma unroll
  for (int mask = 16; mask > 0; mask /= 2) {
    const uint64_t o = __shfl_xor_sync(0xffffffffu, v, mask);
    v = o > v ? o : v;
  }
  return v;
}

}  // namespace kiln::cuda
