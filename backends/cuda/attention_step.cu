// attention for a few query rows over many keys (a decoder step: one row per batch row and head,
// over a KV cache and the encoder's output), head dims up to 128.
//
// attention.cu's warp walks its keys 32 at a time, but adds their value rows one key after the
// other: a load's latency per key, 0.6 us a key on an H200, which made attention most of a
// greedy step's time. Here a block of four warps takes one query row, warp w the key chunks w,
// w + 4, ... (so a lone row still has four warps loading), and per chunk of 32 keys:
//   1. lane l scores key j0 + l: scale * q . k_j (+ the mask), -inf past the keys the row sees;
//   2. the warp's max updates the running max (every lane's running sum and accumulator are
//      rescaled by exp(old max - new max)), and lane l weighs its key: w_l = exp(score - max);
//   3. lane l adds w_l * v_j to an accumulator of all DV columns: the 32 value rows of a chunk
//      are loaded at once, one row per lane, 16 bytes at a time.
// At the end each warp sums its lanes' accumulators (a reduce-scatter: lane l keeps DV / 32
// columns), the warps' partial results go through shared memory, scaled to their common max,
// and y = acc / sum, or zeros where no key counted.
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/attention_step.cuh"
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/float_io.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

using block_reduce::warp_max;
using block_reduce::warp_sum;
using float_io::store;
using float_io::to_f32;

constexpr int kWarps = 4;
constexpr unsigned kFull = 0xffffffffu;

// x[c + e] for e < 8 as floats, zeros at and past n: one or two 16-byte loads when `vector`
// (rows of a multiple of 8 values, 16-byte aligned), else element by element.
template <typename T>
__device__ __forceinline__ void load8(const T* x, int64_t c, int64_t n, bool vector, float (&out)[8]) {
  if (vector && c + 8 <= n) {
    if constexpr (std::is_same_v<T, __half>) {
      Half8 b;
      b.u = *reinterpret_cast<const uint4*>(x + c);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = __half22float2(b.h2[e]);
        out[2 * e] = f.x;
        out[2 * e + 1] = f.y;
      }
    } else {
      const float4 a = *reinterpret_cast<const float4*>(x + c), b = *reinterpret_cast<const float4*>(x + c + 4);
      out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] = c + e < n ? to_f32(x[c + e]) : 0.0f;
}

__device__ __forceinline__ bool vector_rows(const void* base, int64_t n) {
  return n % 8 == 0 && reinterpret_cast<uintptr_t>(base) % 16 == 0;
}

// One halving of warp_reduce_scatter: lanes with `offset` set keep the upper Half of their
// 2 * Half working columns, the others the lower, each adding its partner's (lane ^ offset)
// copy. (Half is a template argument so that every index is a constant: a loop over levels
// left the array in local memory.)
template <int N, int Half>
__device__ __forceinline__ void scatter_level(float (&a)[N], int lane, int offset, int* base) {
  const bool upper = lane & offset;
#pragma unroll
  for (int t = 0; t < Half; ++t) {
    const float lo = a[t], hi = a[t + Half];
    a[t] = (upper ? hi : lo) + __shfl_xor_sync(kFull, upper ? lo : hi, offset);
  }
  if (upper) *base += Half;
}

// Sums a[0..N) over the warp's lanes, scattered: lane l ends with the sums of columns
// [*first, *first + N / 32) in a[0..N / 32).
template <int N>
__device__ __forceinline__ void warp_reduce_scatter(float (&a)[N], int lane, int* first) {
  *first = 0;
  scatter_level<N, N / 2>(a, lane, 16, first);
  scatter_level<N, N / 4>(a, lane, 8, first);
  scatter_level<N, N / 8>(a, lane, 4, first);
  scatter_level<N, N / 16>(a, lane, 2, first);
  scatter_level<N, N / 32>(a, lane, 1, first);
}

template <typename T, typename M, int DV>
__global__ void __launch_bounds__(kWarps * 32) attention_step_kernel(AttentionArgs p) {
  wait_for_predecessor();
  __shared__ float part_acc[kWarps][DV];
  __shared__ float part_max[kWarps], part_sum[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = blockIdx.x;  // (b * heads + h) * sq + i
  const int64_t i = row % p.sq, h = row / p.sq % p.heads, b = row / (p.sq * p.heads);
  const int64_t g = h / (p.heads / p.kv_heads);
  int64_t len = p.sk;
  if (p.kv_length) {
    len = p.kv_length_type == DType::I64 ? static_cast<const int64_t*>(p.kv_length)[b]
                                         : static_cast<const int32_t*>(p.kv_length)[b];
    if (len < 0 || len > p.sk) {
      if (h == 0 && i == 0 && threadIdx.x == 0) atomicOr(p.error, p.error_bit);  // once per batch
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
  const bool vector_k = vector_rows(k, p.d) && vector_rows(q, p.d), vector_v = vector_rows(v, p.dv);

  float acc[DV] = {};
  float max = -INFINITY, sum = 0.0f;  // sum: this lane's weights
  for (int64_t j0 = static_cast<int64_t>(warp) * 32; j0 < seen; j0 += kWarps * 32) {
    const int64_t j = j0 + lane;
    float score = -INFINITY;
    const int64_t from = j < seen ? kv_batch(p, b, j) : b;
    if (j < seen) {
      const T* kj = k + (from - b) * p.kv_heads * p.sk * p.d + j * p.d;
      float dot = 0.0f;
#pragma unroll
      for (int c = 0; c < DV; c += 8) {
        if (c < p.d) {
          float x[8], y[8];
          load8(q, c, p.d, vector_k, x);  // the same address in every lane: a broadcast
          load8(kj, c, p.d, vector_k, y);
#pragma unroll
          for (int e = 0; e < 8; ++e) dot = fmaf(x[e], y[e], dot);
        }
      }
      score = p.scale * dot;
      if (mask) score += to_f32(mask[j * p.mask_strides[3]]);
    }
    const float chunk_max = warp_max(score);
    if (chunk_max == -INFINITY) continue;  // uniform over the warp: nothing changes
    const float new_max = fmaxf(max, chunk_max);
    const float rescale = expf(max - new_max);  // 0 while max is -inf (acc and sum are 0 then)
    const float w = expf(score - new_max);      // 0 for -inf scores
    sum = sum * rescale + w;
#pragma unroll
    for (int c = 0; c < DV; ++c) acc[c] *= rescale;
    max = new_max;
    if (w == 0.0f) continue;
    const T* vj = v + (from - b) * p.kv_heads * p.sk * p.dv + j * p.dv;
#pragma unroll
    for (int c = 0; c < DV; c += 8) {
      if (c < p.dv) {
        float x[8];
        load8(vj, c, p.dv, vector_v, x);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[c + e] = fmaf(w, x[e], acc[c + e]);
      }
    }
  }
  sum = warp_sum(sum);
  int first = 0;
  warp_reduce_scatter(acc, lane, &first);
#pragma unroll
  for (int t = 0; t < DV / 32; ++t) part_acc[warp][first + t] = acc[t];
  if (lane == 0) {
    part_max[warp] = max;
    part_sum[warp] = sum;
  }
  __syncthreads();
  float top = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) top = fmaxf(top, part_max[w]);
  for (int c = threadIdx.x; c < p.dv; c += kWarps * 32) {
    float total = 0.0f, weight = 0.0f;
    if (top != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float s = expf(part_max[w] - top);  // 0 for a warp that saw no key
        total = fmaf(part_acc[w][c], s, total);
        weight = fmaf(part_sum[w], s, weight);
      }
    }
    store(static_cast<T*>(p.y) + row * p.dv + c, top == -INFINITY ? 0.0f : total / weight);
  }
}

template <typename T, int DV>
void launch_typed(const AttentionArgs& p, cudaStream_t s) {
  const auto grid = static_cast<unsigned>(p.batch * p.heads * p.sq);
  if (p.mask && p.mask_type == DType::F16)
    launch(attention_step_kernel<T, __half, DV>, grid, kWarps * 32, 0, s, p);
  else
    launch(attention_step_kernel<T, float, DV>, grid, kWarps * 32, 0, s, p);
}

template <typename T>
void launch_dims(const AttentionArgs& p, cudaStream_t s) {
  if (p.d <= 64 && p.dv <= 64)
    launch_typed<T, 64>(p, s);
  else
    launch_typed<T, 128>(p, s);
}

}  // namespace

bool attention_step_fits(const AttentionArgs& p) {
  return p.d <= 128 && p.dv <= 128 && p.batch * p.heads * p.sq <= 0x7fffffff;
}

void launch_attention_step(const AttentionArgs& p, cudaStream_t s) {
  if (p.type == DType::F16)
    launch_dims<__half>(p, s);
  else
    launch_dims<float>(p, s);
}

}  // namespace kiln::cuda
