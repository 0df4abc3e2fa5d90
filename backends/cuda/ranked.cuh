// Values ranked for argmax and top-k: a strict total order on (value, index), the larger (or
// smaller) value first, ties to the lower index, NaN above every number and NaNs equal, so that
// every thread agrees on the best of any set and the GPU picks what the CPU reference picks.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/cuda/numeric.cuh"

namespace kiln::cuda {

// A value and the index it came from; index < 0 stands for none yet.
template <typename K>
struct Ranked {
  K v;
  int64_t i;
};

template <typename T>
__device__ __forceinline__ T shuffle_xor(T v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
template <typename K>
__device__ __forceinline__ Ranked<K> shuffle_xor(Ranked<K> r, int mask) {
  return {shuffle_xor(r.v, mask), shuffle_xor(r.i, mask)};
}

// Floats compare as fp32 (exact for every type here), integers as themselves.
template <typename T>
using Key = std::conditional_t<std::is_integral_v<T>, T, float>;

template <typename T>
__device__ __forceinline__ Key<T> key(T v) {
  if constexpr (std::is_integral_v<T>)
    return v;
  else
    return to_float(v);
}

// p > q with NaN above every number and NaNs equal.
template <typename K>
__device__ __forceinline__ bool greater(K p, K q) {
  if constexpr (std::is_integral_v<K>)
    return p > q;
  else
    return !isnan(q) && (isnan(p) || p > q);
}

// Whether a ranks before b: better, or as good and of a lower index. A strict total order on
// (value, index), so every thread of a group agrees on the best of any set.
template <typename K>
__device__ __forceinline__ bool ahead(const Ranked<K>& a, const Ranked<K>& b, bool largest) {
  const bool a_better = largest ? greater(a.v, b.v) : greater(b.v, a.v);
  const bool b_better = largest ? greater(b.v, a.v) : greater(a.v, b.v);
  return a_better || (!b_better && a.i < b.i);
}

template <typename K>
__device__ __forceinline__ Ranked<K> first_of(const Ranked<K>& a, const Ranked<K>& b, bool largest) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  return ahead(b, a, largest) ? b : a;
}

}  // namespace kiln::cuda
