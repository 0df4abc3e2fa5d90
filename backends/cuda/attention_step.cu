// attention for a few query rows over many keys (a decoder step: one row per batch row and head,
// over a KV cache and the encoder's output), head dims up to 128.
//
// attention.cu's warp walks its keys 32 at a time, but adds their value rows one key after the
// other: a load's latency per key. Here a warp takes a query row's keys in chunks of 32, and its
// lanes split each key row: L = D / 8 lanes read 8 values each (16 bytes in fp16), so that one
// load instruction reads G = 32 / L whole consecutive rows (coalesced), and a lane's registers
// hold only its 8 columns of the accumulator. Per chunk:
//   1. pass t = 0..L-1: lane (g, s) = (lane / L, lane % L) multiplies q's columns 8s.. with key
//      j0 + t * G + g's (the L loads in flight together), and a lane group's partial dots are
//      summed by shuffles: each lane then has the scores of its group's L keys;
//   2. the chunk's max over the groups updates the running max (the running sum and the
//      accumulator rescaled by exp(old max - new max)), weights w = exp(score - max);
//   3. the same passes over the value rows add w * v to the lane's 8 accumulator columns.
// At the end the groups' sums are added (shuffles). W warps may share a row (W = 4 where few
// rows would leave most of the GPU idle: a greedy step has one row per head), warp w taking
// chunks w, w + W, ...; their partial results meet in shared memory, scaled to their common max.
// y = acc / sum, or zeros where no key counted.
// On an H200 this took the decoder step of a 1024-wide, 12-layer model (16 heads of 64, keys of
// 64 positions in the cache and 40 of the source) from 2.117 to 1.774 ms at 128 rows (beam 4 over
// 32 sources); the step before had a block of four warps per row, each lane a key's whole row.
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/alignment.cuh"
#include "backends/cuda/attention_step.cuh"
#include "backends/cuda/float_io.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/ptx.cuh"

namespace kiln::cuda {

namespace {

using float_io::store;
using float_io::to_f32;

constexpr int kWarps = 4;
constexpr unsigned kFull = 0xffffffffu;

// x[c + e] for e < 8 as floats: with VEC one or two 16-byte loads (the caller has checked that
// rows are a multiple of 8 values, 16-byte aligned, and c + 8 <= n), else element by element,
// zeros at and past n.
template <bool VEC, typename T>
__device__ __forceinline__ void load8(const T* x, int64_t c, int64_t n, float (&out)[8]) {
  if constexpr (VEC) {
    if constexpr (std::is_same_v<T, __half>) {
      unpack8(*reinterpret_cast<const uint4*>(x + c), out);
    } else {
      const float4 a = *reinterpret_cast<const float4*>(x + c), b = *reinterpret_cast<const float4*>(x + c + 4);
      out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
    }
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = c + e < n ? to_f32(x[c + e]) : 0.0f;
  }
}

// Key (or value) j's row in row `from` of k or v (kv_rows' entry for it), `at` pointing into
// row `base` (kv_base).
template <typename T>
__device__ __forceinline__ const T* row_of(const T* at, const AttentionArgs& p, int64_t base, int64_t from, int64_t j,
                                           int64_t width) {
  return at + (from - base) * p.kv_heads * p.sk * width + j * width;
}

__device__ __forceinline__ float mask_at(const AttentionArgs& p, const void* mask, int64_t j) {
  const int64_t at = j * p.mask_strides[3];
  return p.mask_type == DType::F16 ? __half2float(static_cast<const __half*>(mask)[at])
                                   : static_cast<const float*>(mask)[at];
}

// kv_cache_attention's form (AttentionArgs::offset): the first of row b's new positions, or -1
// where its offset leaves no room for them.
__device__ __forceinline__ int64_t new_keys_at(const AttentionArgs& p, int64_t b) {
  const int64_t i = p.offsets == 1 ? 0 : b;
  const int64_t at =
      p.offset_type == DType::I64 ? static_cast<const int64_t*>(p.offset)[i] : static_cast<const int32_t*>(p.offset)[i];
  return at >= 0 && at <= p.sk - p.sq ? at : -1;
}

// The projection's row for row b's new position i: its key heads at heads * d, its value heads
// after them.
template <typename T>
__device__ __forceinline__ const T* new_keys(const AttentionArgs& p, int64_t b, int64_t i) {
  return static_cast<const T*>(p.q) + (b * p.sq + i) * p.q_stride + p.heads * p.d;
}

// Copies n values (n <= 128) from `from` to `to`, 8 per lane.
template <bool VEC, typename T>
__device__ __forceinline__ void copy_row(const T* from, T* to, int64_t n, int lane) {
  for (int64_t c = static_cast<int64_t>(lane) * 8; c < n; c += 32 * 8) {
    if constexpr (VEC) {
      *reinterpret_cast<uint4*>(to + c) = *reinterpret_cast<const uint4*>(from + c);
      if constexpr (!std::is_same_v<T, __half>)
        *reinterpret_cast<uint4*>(to + c + 4) = *reinterpret_cast<const uint4*>(from + c + 4);
    } else {
      for (int64_t e = c; e < c + 8 && e < n; ++e) to[e] = from[e];
    }
  }
}

// D: head dims padded (64 or 128); W: warps per query row; VEC: 16-byte loads (load8); kAppend:
// kv_cache_attention's form (AttentionArgs::offset).
//
// Where every input but q is settled (AttentionArgs::settled) and rows are fp16 vectors of heads
// up to 64 wide, the warp's first chunk of keys (their cache rows, kv_rows' and offset's entries,
// kv_length) is read before the kernel waits for its predecessor (the projection that writes q),
// and the chunk's value rows are copied into shared memory (cp.async, 16 KiB a block): a decoder
// step's attention, a chain of dependent loads of a few bytes each, then waits for its query
// alone and finds its first values on chip. Keys and values new this call come from the
// projection after the wait.
template <typename T, int D, int W, bool VEC, bool kAppend>
__global__ void __launch_bounds__(kWarps * 32, 4) attention_step_kernel(AttentionArgs p) {
  constexpr int L = D / 8;   // lanes per key row
  constexpr int G = 32 / L;  // key rows per pass
  constexpr int kRowsPerBlock = kWarps / W;
  constexpr bool kPrefetch = VEC && std::is_same_v<T, __half> && D == 64;  // registers: 8 key vectors a lane
  const bool early = kPrefetch && p.settled;                               // uniform over the grid
  if (!early) wait_for_predecessor();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / L, sub = lane % L;
  const int slot = warp / W, part = warp % W;  // the block's row slot, the warp's share of its keys
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + slot;  // (b * heads + h) * sq + i
  const bool valid = row < p.batch * p.heads * p.sq;                            // uniform over the warp
  float acc[8] = {};
  float max = -INFINITY, sum = 0.0f;                // sum: the weights of this lane's group's keys
  const int64_t c = static_cast<int64_t>(sub) * 8;  // the lane's columns c .. c + 7
  const int64_t i = row % p.sq, h = row / p.sq % p.heads, b = row / (p.sq * p.heads);
  const int64_t g = h / (p.heads / p.kv_heads);
  const int64_t base = kv_base(p, b);  // the row of k and v that k and v point into
  const T* k = static_cast<const T*>(p.k) + (base * p.kv_heads + g) * p.sk * p.d;
  const T* v = static_cast<const T*>(p.v) + (base * p.kv_heads + g) * p.sk * p.dv;
  // Lanes past the head's columns load nothing (D > d).
  const bool k_columns = c < p.d, v_columns = c < p.dv;
  // A chunk's keys, pass t: the row of k and v holding each (from), and which of that row's new
  // positions it is (fresh, -1: none; kv_cache_attention). Keys past `seen` read the last key's
  // row (then scored -inf), so that a pass's loads have no branch and are in flight together.
  int from[L], fresh[L];
  auto key_row = [&](int64_t j0, int t, int64_t seen) {  // < sk, which attention_step_fits bounds
    const int64_t j = j0 + t * G + group;
    return j < seen ? j : seen - 1;
  };
  auto locate = [&](int64_t j0, int64_t seen) {
    const int from_lane = static_cast<int>(j0 + lane < seen ? kv_batch(p, b, j0 + lane) : base);
    int new_lane = -1;
    if (kAppend && j0 + lane < seen) {
      const int64_t at = new_keys_at(p, from_lane), j = j0 + lane;
      if (at >= 0 && j >= at && j < at + p.sq) new_lane = static_cast<int>(j - at);
    }
#pragma unroll
    for (int t = 0; t < L; ++t) {
      const int key = t * G + group;
      const int source = key < seen - j0 ? key : static_cast<int>(seen - 1 - j0);
      from[t] = __shfl_sync(kFull, from_lane, source);
      fresh[t] = kAppend ? __shfl_sync(kFull, new_lane, source) : -1;
    }
  };
  auto key_at = [&](int64_t j0, int t, int64_t seen) {
    return fresh[t] >= 0 ? new_keys<T>(p, from[t], fresh[t]) + g * p.d
                         : row_of(k, p, base, from[t], key_row(j0, t, seen), p.d);
  };
  int64_t seen = 0;
  Half8 early_keys[L];  // with `early`, the first chunk's key rows (this lane's columns)
  // With `early`, the first chunk's value rows (this lane's columns), copied into shared memory
  // (cp.async: no registers held across the wait).
  __shared__ uint4 early_values[kPrefetch ? kWarps : 1][kPrefetch ? L : 1][32];
  const int64_t first = int64_t{part} * 32;  // the warp's first chunk
  if (valid) {
    const int64_t len = kv_limit(p, b, h == 0 && i == 0 && threadIdx.x % (32 * W) == 0);
    seen = keys_seen(p, i, len);
    if constexpr (kPrefetch) {
      if (early && first < seen) {
        locate(first, seen);
#pragma unroll
        for (int t = 0; t < L; ++t)
          if (fresh[t] < 0 && k_columns) early_keys[t].u = *reinterpret_cast<const uint4*>(key_at(first, t, seen) + c);
#pragma unroll
        for (int t = 0; t < L; ++t)
          if (fresh[t] < 0 && v_columns)
            ptx::copy_async16(&early_values[warp][t][lane],
                              row_of(v, p, base, from[t], key_row(first, t, seen), p.dv) + c, 16);
        ptx::copy_async_commit();
      }
    }
  }
  // kv_cache_attention: the first query head of each kv head writes position i's new key and
  // value into the caches (a warp of its row). Nothing in this launch reads them there (new keys
  // come from the projection). Where registers allow (kPrefetch's form: fp16 heads of up to 64
  // in 16-byte loads) it does so last: written first, their load and store held up the warp's
  // attention (at the end the rows are in L1, read by the attention). Wider heads write first,
  // as the values this keeps live until the end would spill.
  constexpr bool kWriteLast = kPrefetch;
  auto write_new_position = [&] {
    if (!kAppend || h % (p.heads / p.kv_heads) != 0 || part != 0) return;
    const int64_t at = new_keys_at(p, b);
    if (at >= 0) {
      const T* from_row = new_keys<T>(p, b, i);
      const int64_t cell = (b * p.kv_heads + g) * p.sk + at + i;
      copy_row<VEC>(from_row + g * p.d, static_cast<T*>(p.k_out) + cell * p.d, p.d, lane);
      copy_row<VEC>(from_row + p.kv_heads * p.d + g * p.dv, static_cast<T*>(p.v_out) + cell * p.dv, p.dv, lane);
    } else if (h == 0 && i == 0 && lane == 0) {
      atomicOr(p.error, p.offset_error_bit);
    }
  };
  if (early) wait_for_predecessor();
  if (valid) {
    if constexpr (!kWriteLast) write_new_position();
    const T* q = kAppend ? static_cast<const T*>(p.q) + (b * p.sq + i) * p.q_stride + h * p.d
                         : static_cast<const T*>(p.q) + row * p.d;
    const int64_t mask_at_row = b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2];
    const void* mask =
        p.mask ? static_cast<const char*>(p.mask) + (p.mask_type == DType::F16 ? 2 : 4) * mask_at_row : nullptr;
    float qc[8] = {};
    if (k_columns) load8<VEC>(q, c, p.d, qc);
    // One chunk of keys: scores, the running max and sum, the weighted values. `fetched`: the
    // chunk's keys were located and loaded before the wait (early_keys), its value rows copied
    // into early_values. A separate copy of the code for it, so that early_keys' registers are
    // free in the loop.
    auto chunk = [&](int64_t j0, auto fetched) {
      constexpr bool kFetched = decltype(fetched)::value;
      if constexpr (kFetched)
        ptx::copy_async_wait_all();  // this lane's early_values, issued before the wait
      else
        locate(j0, seen);
      float score[L];
#pragma unroll
      for (int t = 0; t < L; ++t) {
        float x[8] = {};
        if (kFetched && fresh[t] < 0) {
          if (k_columns) unpack8(early_keys[t].u, x);
        } else if (k_columns) {
          load8<VEC>(key_at(j0, t, seen), c, p.d, x);
        }
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot = fmaf(qc[e], x[e], dot);
        score[t] = dot;
      }
      float chunk_max = -INFINITY;
#pragma unroll
      for (int t = 0; t < L; ++t) {
#pragma unroll
        for (int offset = L / 2; offset >= 1; offset /= 2) score[t] += __shfl_xor_sync(kFull, score[t], offset);
        const int64_t j = j0 + t * G + group;
        score[t] = j < seen ? p.scale * score[t] + (mask ? mask_at(p, mask, j) : 0.0f) : -INFINITY;
        chunk_max = fmaxf(chunk_max, score[t]);
      }
#pragma unroll
      for (int offset = L; offset < 32; offset *= 2)
        chunk_max = fmaxf(chunk_max, __shfl_xor_sync(kFull, chunk_max, offset));
      if (chunk_max == -INFINITY) return;  // uniform over the warp: nothing changes
      const float new_max = fmaxf(max, chunk_max);
      const float rescale = expf(max - new_max);  // 0 while max is -inf (acc and sum are 0 then)
      max = new_max;
      sum *= rescale;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] *= rescale;
      if (!v_columns) {
#pragma unroll
        for (int t = 0; t < L; ++t) sum += expf(score[t] - new_max);
        return;
      }
#pragma unroll
      for (int t = 0; t < L; ++t) {
        const float w = expf(score[t] - new_max);  // 0 for -inf scores
        sum += w;
        float x[8];
        bool staged = false;  // the value row is in early_values
        if constexpr (kFetched) {
          staged = fresh[t] < 0;
          if (staged) unpack8(early_values[warp][t][lane], x);
        }
        if (!staged) {
          const T* value_at = fresh[t] >= 0 ? new_keys<T>(p, from[t], fresh[t]) + p.kv_heads * p.d + g * p.dv
                                            : row_of(v, p, base, from[t], key_row(j0, t, seen), p.dv);
          load8<VEC>(value_at, c, p.dv, x);
        }
        // A key of weight 0 adds nothing, even where its value row is not finite.
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] = w == 0.0f ? acc[e] : fmaf(w, x[e], acc[e]);
      }
    };
    int64_t j0 = first;
    if constexpr (kPrefetch) {
      if (early && first < seen) {
        chunk(first, std::true_type{});
        j0 += W * 32;
      }
    }
    for (; j0 < seen; j0 += W * 32) chunk(j0, std::false_type{});
      // The groups' keys together: every lane of a column slice then has the warp's sums.
#pragma unroll
    for (int offset = L; offset < 32; offset *= 2) {
      sum += __shfl_xor_sync(kFull, sum, offset);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] += __shfl_xor_sync(kFull, acc[e], offset);
    }
  }
  if constexpr (W == 1) {
    if (!valid) return;
    if (group == 0) {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (c + e < p.dv) store(static_cast<T*>(p.y) + row * p.dv + c + e, max == -INFINITY ? 0.0f : acc[e] / sum);
    }
    if constexpr (kWriteLast) write_new_position();
  } else {
    __shared__ float part_acc[kWarps][D];
    __shared__ float part_max[kWarps], part_sum[kWarps];
    if (group == 0) {
#pragma unroll
      for (int e = 0; e < 8; ++e) part_acc[warp][c + e] = acc[e];
    }
    if (lane == 0) {
      part_max[warp] = max;
      part_sum[warp] = sum;
    }
    __syncthreads();
    if (!valid) return;
    const int first = slot * W;  // the row's warps
    float top = -INFINITY;
#pragma unroll
    for (int w = 0; w < W; ++w) top = fmaxf(top, part_max[first + w]);
    for (int64_t col = part * 32 + lane; col < p.dv; col += W * 32) {
      float total = 0.0f, weight = 0.0f;
      if (top != -INFINITY) {
#pragma unroll
        for (int w = 0; w < W; ++w) {
          const float scale = expf(part_max[first + w] - top);  // 0 for a warp that saw no key
          total = fmaf(part_acc[first + w][col], scale, total);
          weight = fmaf(part_sum[first + w], scale, weight);
        }
      }
      store(static_cast<T*>(p.y) + row * p.dv + col, top == -INFINITY ? 0.0f : total / weight);
    }
    if constexpr (kWriteLast) write_new_position();
  }
}

// Warps per query row: four where few rows would leave most of the GPU's warp slots empty,
// fewer as the rows fill them (16 a multiprocessor: the kernel's registers allow no more),
// and no more than the key chunks of the longest row. On an H200, one row per head of a greedy
// step (16 rows) ran fastest with four (or two), 1024 rows with two, 2048 with one.
int warps_per_row(const AttentionArgs& p) {
  const int sms = multiprocessor_count();
  const int64_t rows = p.batch * p.heads * p.sq, chunks = (p.sk + 31) / 32, slots = int64_t{sms} * 16;
  int w = 4;
  while (w > 1 && (rows * w > slots || w / 2 >= chunks)) w /= 2;
  return w;
}

template <typename T, int D, bool VEC, bool kAppend>
void launch_split(const AttentionArgs& p, cudaStream_t s) {
  const int64_t rows = p.batch * p.heads * p.sq;
  auto go = [&](auto kernel, int w) {
    const int64_t per_block = kWarps / w;
    launch(kernel, static_cast<unsigned>((rows + per_block - 1) / per_block), kWarps * 32, 0, s, p);
  };
  switch (warps_per_row(p)) {
    case 4:
      return go(attention_step_kernel<T, D, 4, VEC, kAppend>, 4);
    case 2:
      return go(attention_step_kernel<T, D, 2, VEC, kAppend>, 2);
    default:
      return go(attention_step_kernel<T, D, 1, VEC, kAppend>, 1);
  }
}

template <typename T, bool kAppend>
void launch_typed(const AttentionArgs& p, cudaStream_t s) {
  const bool vec = p.d % 8 == 0 && p.dv % 8 == 0 && p.q_stride % 8 == 0 && aligned16(p.q, p.k, p.v, p.k_out, p.v_out);
  const bool narrow = p.d <= 64 && p.dv <= 64;
  if (vec)
    narrow ? launch_split<T, 64, true, kAppend>(p, s) : launch_split<T, 128, true, kAppend>(p, s);
  else
    narrow ? launch_split<T, 64, false, kAppend>(p, s) : launch_split<T, 128, false, kAppend>(p, s);
}

}  // namespace

bool attention_step_fits(const AttentionArgs& p) {
  return p.d <= 128 && p.dv <= 128 && p.sk <= 0x7fffffff && p.batch * p.heads * p.sq <= 0x7fffffff;
}

void launch_attention_step(const AttentionArgs& p, cudaStream_t s) {
  if (p.type == DType::F16)
    p.offset ? launch_typed<__half, true>(p, s) : launch_typed<__half, false>(p, s);
  else
    p.offset ? launch_typed<float, true>(p, s) : launch_typed<float, false>(p, s);
}

}  // namespace kiln::cuda
