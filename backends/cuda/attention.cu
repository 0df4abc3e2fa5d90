// attention with an online softmax: no score matrix in memory, any head dims.
// A warp per query row (b, h, i), four rows per block, and per 256 columns of the output
// (blockIdx.y: column chunk; a head dim past 256 recomputes the scores per chunk). The warp
// walks the keys it may see (j < seen: kv_length and the causal limit) 32 at a time:
//   1. lane l scores key j0 + l: scale * q . k_j (fp32 sums; q is read by every lane at the same
//      address, a broadcast) + the mask; lanes past `seen` score -inf.
//   2. the warp's max and sum of exp(score - max) update the row's running max and sum (the
//      running sum and the accumulator are rescaled by exp(old max - new max)); a chunk whose
//      keys are all -inf changes nothing and is skipped, so the max stays -inf until a key counts.
//   3. for each key t of the chunk, its weight is shuffled from lane t and every lane adds
//      weight * v[t][c] for its columns c = chunk + lane + 32u, u < 8 (coalesced rows of v).
// At the end y = acc / sum, or zeros where no key counted (the max is still -inf).
// Control flow is uniform over a warp (the row, seen, the chunk max are the warp's), so the
// full-mask shuffles are safe; warps share nothing, so there is no block barrier.
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/attention.cuh"
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/float_io.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

using block_reduce::warp_max;
using block_reduce::warp_sum;
using float_io::store;
using float_io::to_f32;

constexpr int kWarps = 4;                // query rows per block
constexpr int kColumns = 256;            // output columns per warp
constexpr int kPerLane = kColumns / 32;  // accumulators per lane
constexpr unsigned kFull = 0xffffffffu;

// q . k in fp32. Aligned fp16 rows of a multiple of 8 (every head size in use) are read 16 bytes
// at a time: each lane walks its own key's row, so scalar loads would touch 32 rows per instruction
// eight times as often.
template <typename T>
__device__ __forceinline__ float dot_product(const T* q, const T* k, int64_t d) {
  float dot = 0.0f;
  if constexpr (std::is_same_v<T, __half>) {
    if (d % 8 == 0 && (reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k)) % 16 == 0) {
      for (int64_t c = 0; c < d; c += 8) {
        Half8 a, b;
        a.u = *reinterpret_cast<const uint4*>(q + c);
        b.u = *reinterpret_cast<const uint4*>(k + c);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 x = __half22float2(a.h2[e]), y = __half22float2(b.h2[e]);
          dot = fmaf(x.x, y.x, dot);
          dot = fmaf(x.y, y.y, dot);
        }
      }
      return dot;
    }
  }
  for (int64_t c = 0; c < d; ++c) dot = fmaf(to_f32(q[c]), to_f32(k[c]), dot);
  return dot;
}

template <typename T, typename M>
__global__ void attention_kernel(AttentionArgs p) {
  wait_for_predecessor();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (row >= p.batch * p.heads * p.sq) return;  // the whole warp
  const int64_t b = row / (p.heads * p.sq), h = row / p.sq % p.heads, i = row % p.sq;
  const int64_t g = h / (p.heads / p.kv_heads);
  int64_t len = p.sk;
  if (p.kv_length) {
    len = p.kv_length_type == DType::I64 ? static_cast<const int64_t*>(p.kv_length)[b]
                                         : static_cast<const int32_t*>(p.kv_length)[b];
    if (len < 0 || len > p.sk) {
      if (h == 0 && i == 0 && lane == 0 && blockIdx.y == 0) atomicOr(p.error, p.error_bit);  // once per batch
      len = len < 0 ? 0 : p.sk;
    }
  }
  int64_t seen = len;
  if (p.causal) {
    seen = i + len - p.sq + 1;
    seen = seen < 0 ? 0 : seen > len ? len : seen;
  }
  const T* q = static_cast<const T*>(p.q) + row * p.d;
  const T* k = static_cast<const T*>(p.k) + (b * p.kv_heads + g) * p.sk * p.d;
  const T* v = static_cast<const T*>(p.v) + (b * p.kv_heads + g) * p.sk * p.dv;
  const M* mask =
      p.mask ? static_cast<const M*>(p.mask) + b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2]
             : nullptr;
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * kColumns + lane;
  float acc[kPerLane] = {};
  float max = -INFINITY, sum = 0.0f;
  for (int64_t j0 = 0; j0 < seen; j0 += 32) {
    const int64_t j = j0 + lane;
    float score = -INFINITY;
    if (j < seen) {
      const float dot = dot_product(q, k + j * p.d, p.d);
      score = p.scale * dot;
      if (mask) score += to_f32(mask[j * p.mask_strides[3]]);
    }
    const float chunk_max = warp_max(score);
    if (chunk_max == -INFINITY) continue;
    const float new_max = fmaxf(max, chunk_max);
    const float rescale = expf(max - new_max);   // 0 while max is -inf (acc and sum are 0 then)
    const float weight = expf(score - new_max);  // 0 for -inf scores
    sum = sum * rescale + warp_sum(weight);
#pragma unroll
    for (int u = 0; u < kPerLane; ++u) acc[u] *= rescale;
    const int keys = seen - j0 < 32 ? static_cast<int>(seen - j0) : 32;
    for (int t = 0; t < keys; ++t) {
      const float w = __shfl_sync(kFull, weight, t);
      const T* vj = v + (j0 + t) * p.dv;
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) {
        const int64_t c = c0 + 32 * u;
        if (c < p.dv) acc[u] = fmaf(w, to_f32(vj[c]), acc[u]);
      }
    }
    max = new_max;
  }
  T* y = static_cast<T*>(p.y) + row * p.dv;
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int64_t c = c0 + 32 * u;
    if (c < p.dv) store(y + c, max == -INFINITY ? 0.0f : acc[u] / sum);
  }
}

template <typename T>
void launch_typed(const AttentionArgs& p, dim3 grid, cudaStream_t s) {
  if (p.mask && p.mask_type == DType::F16)
    launch(attention_kernel<T, __half>, grid, kWarps * 32, 0, s, p);
  else
    launch(attention_kernel<T, float>, grid, kWarps * 32, 0, s, p);
}

}  // namespace

void launch_attention(const AttentionArgs& p, cudaStream_t s) {
  const int64_t rows = p.batch * p.heads * p.sq;
  if (rows <= 0 || p.dv <= 0) return;
  const dim3 grid(static_cast<unsigned>((rows + kWarps - 1) / kWarps),
                  static_cast<unsigned>((p.dv + kColumns - 1) / kColumns));
  if (p.type == DType::F16)
    launch_typed<__half>(p, grid, s);
  else
    launch_typed<float>(p, grid, s);
}

}  // namespace kiln::cuda
