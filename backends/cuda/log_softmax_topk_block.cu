// log_softmax_topk in one launch, a block (or a cluster of blocks) a row: for a decoder's
// vocabulary (rows of at most 65536 entries) and k <= 32. topk_rows.cu's levels take three
// launches (each segment's best, a first level of per-segment picks, the picks' picks), each
// reading the row or the last one's candidates from memory; at one row (a greedy step) those
// launches, not the bytes, are the time, and at 128 rows the first level's rounds are.
//
// A block of 512 threads takes its part of a row in 16-byte vectors, each thread the vectors
// i = part * 512 + thread, then every C * 512 further (a warp's loads coalesced; C = 1, or the
// cluster's size where few rows would leave most of the GPU idle), and one of the row's few
// unaligned first and last entries, in two passes (the second reads the row from L1/L2):
//   1. each thread's best entry (packed_entry.cuh, bans ranked -inf) and largest score; the
//      block's maximum, and a floor: the k-th best of its threads' bests. Those are k distinct
//      entries at or above it, so the block's k best are all at or above it too.
//   2. the sum of exp(x - maximum) over the block's entries (banned scores too, as
//      log_softmax's sum; -inf adds nothing), and every entry at or above the floor appended to
//      a list in shared memory. Only the k threads whose best is at or above the floor hold such
//      entries: at most k * 130 of them (the capacity), a few more than k in a row of real scores.
// Then the block ranks the list's entries (block_picks) and keeps the k best. In a cluster, the
// first block then reads the others' picks and sums from their shared memory and ranks again.
// Last, the row's log(sum(exp(x))) = maximum + log(sum) is subtracted from the picks. Banned
// entries come from the row's list through a bitmap in shared memory (65536 entries: 8 KB). The
// picks are exactly those of topk_rows.cu's levels (the same total order on packed words); only
// the sum's rounding differs.
// The first form (2-byte loads, picks in k rounds of warp reductions) took 43-46 us over 128
// rows of 50264-58101 halves and 24 us over one row (a cluster of 8) on an H100, kernels one at
// a time; the loads in flight, not the bytes, bounded the passes.
#include <cooperative_groups.h>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/log_softmax_topk_block.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/packed_entry.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxDim = 65536;
constexpr int64_t kPerThread = kMaxDim / kThreads;  // whole vectors' entries a thread takes, at most
// A thread's entries, at most: its vectors' and one of the row's unaligned first and last few.
constexpr int64_t kListPerThread = kPerThread + 2;
constexpr int64_t kMaxK = 32;
constexpr int kCluster = 8;  // blocks a row where rows are few (the portable cluster size)
constexpr int kUnroll = 4;   // 16-byte loads in flight per thread
constexpr unsigned kFull = 0xffffffffu;

// The warp's 32 words, largest first across the lanes (a bitonic sort over shuffles: 15 steps
// where k rounds of a warp maximum took 5 each).
__device__ uint64_t warp_sorted(uint64_t v, int lane) {
#pragma unroll
  for (int size = 2; size <= 32; size *= 2)
#pragma unroll
    for (int stride = size / 2; stride > 0; stride /= 2) {
      const uint64_t o = __shfl_xor_sync(kFull, v, stride);
      const bool lower = (lane & stride) == 0, descending = (lane & size) == 0;
      v = (lower == descending) == (o > v) ? o : v;
    }
  return v;
}

// The k largest of the n words at s (words distinct but for 0, which stands for none) into
// out[0..k), largest first; out holds 0 past them (the caller zeroed it). Every thread of the
// block takes words and counts the words above each (its rank): a few loads of shared memory
// per word, where picking k times in turn waited on k warp reductions. Ends with a barrier.
__device__ void block_picks(const uint64_t* s, int n, int64_t k, uint64_t* out) {
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const uint64_t e = s[i];
    if (e == 0) continue;
    int64_t rank = 0;
    for (int j = 0; j < n && rank < k; ++j) rank += s[j] > e;
    if (rank < k) out[rank] = e;
  }
  __syncthreads();
}

// Words above e in a[0..k), largest first (0 past the words): a binary search.
__device__ __forceinline__ int64_t above_in(const uint64_t* a, int64_t k, uint64_t e) {
  int64_t lo = 0, hi = k;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (a[mid] > e)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

__device__ __forceinline__ bool banned_at(const uint32_t* bits, int64_t j) { return (bits[j >> 5] >> (j & 31)) & 1u; }

// 16 bytes of fp32 as 4 floats (unpack8 is the fp16 one).
__device__ __forceinline__ void unpack4(const uint4& w, float (&v)[4]) {
  v[0] = __uint_as_float(w.x), v[1] = __uint_as_float(w.y), v[2] = __uint_as_float(w.z), v[3] = __uint_as_float(w.w);
}

// Calls f(value, j) for this thread's entries of the row x[0..n): 16-byte vectors i = first,
// first + stride, ... of the row's aligned middle (kUnroll loads in flight: 2-byte loads kept a
// row of 58101 halves at about 1 TB/s over 128 rows), and at most one of the row's first
// (before the first 16-byte boundary) and one of its last entries.
template <typename T, typename F>
__device__ __forceinline__ void for_entries(const T* x, int64_t n, int64_t first, int64_t stride, F f) {
  constexpr int V = 16 / sizeof(T);
  const int64_t misaligned = static_cast<int64_t>(reinterpret_cast<uintptr_t>(x) % 16 / sizeof(T));
  const int64_t head = min(n, misaligned == 0 ? 0 : V - misaligned);
  const int64_t vectors = (n - head) / V, tail = head + vectors * V;
  if (first < head) f(to_float(x[first]), first);
  if (tail + first < n) f(to_float(x[tail + first]), tail + first);
  const uint4* vx = reinterpret_cast<const uint4*>(x + head);
  for (int64_t i0 = first; i0 < vectors; i0 += kUnroll * stride) {
    uint4 w[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i0 + u * stride < vectors) w[u] = vx[i0 + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = i0 + u * stride;
      if (i >= vectors) continue;
      float v[V];
      if constexpr (V == 8) {
        unpack8(w[u], v);
      } else {
        unpack4(w[u], v);
      }
#pragma unroll
      for (int e = 0; e < V; ++e) f(v[e], head + i * V + e);
    }
  }
}

// What a block leaves for its cluster's first block.
template <int K>
struct BlockResult {
  uint64_t picks[K];
  float max, sum;
};

// K: at least k (8, 16 or 32), the list's capacity in multiples of kListPerThread; C: blocks a row.
template <typename T, int K, int C>
__global__ void __launch_bounds__(kThreads) log_softmax_topk_block_kernel(LogSoftmaxTopkArgs a) {
  __shared__ uint32_t bits[kMaxDim / 32];
  __shared__ uint64_t list[K * kListPerThread];
  __shared__ uint64_t warp_bests[kWarps * K];  // each warp's k best, largest first
  __shared__ uint64_t picked[K];
  __shared__ float scratch[32];
  __shared__ uint64_t floor_word;
  __shared__ int count;
  __shared__ BlockResult<K> result;
  const TopkArgs& p = a.topk;
  const int64_t n = p.view.dim, row = blockIdx.x / C, part = blockIdx.x % C, k = p.k;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t w = threadIdx.x; w < (n + 31) / 32; w += kThreads) bits[w] = 0;
  if (threadIdx.x < K) picked[threadIdx.x] = 0;
  if (threadIdx.x == 0) count = 0, floor_word = 0;
  __syncthreads();
  wait_for_predecessor();
  if (a.banned) {
    for (int64_t b = threadIdx.x; b < a.per_row; b += kThreads) {
      const int64_t at = row * a.per_row + b;
      const int64_t t = a.banned_type == DType::I64 ? static_cast<const int64_t*>(a.banned)[at]
                                                    : static_cast<const int32_t*>(a.banned)[at];
      if (t >= n && part == 0) atomicOr(a.error, a.error_bit);
      if (t >= 0 && t < n) atomicOr(&bits[t >> 5], 1u << (t & 31));
    }
  }
  __syncthreads();
  const T* x = static_cast<const T*>(p.x) + row * n;
  auto entry = [&](float v, int64_t j) { return pack(banned_at(bits, j) ? -INFINITY : v, j, true); };
  const int64_t first = part * kThreads + threadIdx.x, stride = int64_t{C} * kThreads;

  // Pass 1: this thread's best entry and largest score.
  uint64_t best = 0;
  float high = -INFINITY;
  for_entries(x, n, first, stride, [&](float v, int64_t j) {
    high = fmaxf(high, v);  // NaN left out here: it makes the sum NaN below
    const uint64_t e = entry(v, j);
    best = e > best ? e : best;
  });
  const float block_max = block_reduce::block_reduce<true>(high, scratch);
  // The floor: the k-th best of the threads' bests (0 where fewer than k threads hold entries:
  // all are listed). Each warp sorts its threads' bests; each of the warps' k best then counts
  // the ones above it in every warp's list.
  const uint64_t sorted = warp_sorted(best, lane);
  if (lane < k) warp_bests[warp * k + lane] = sorted;
  __syncthreads();
  if (threadIdx.x < kWarps * k) {
    const uint64_t e = warp_bests[threadIdx.x];
    if (e != 0) {
      int64_t rank = 0;
      for (int w = 0; w < kWarps; ++w) rank += above_in(warp_bests + w * k, k, e);
      if (rank == k - 1) floor_word = e;
    }
  }
  __syncthreads();

  // Pass 2: the sum, and the entries at or above the floor.
  const uint64_t at_least = floor_word;
  float sum = 0.0f;
  for_entries(x, n, first, stride, [&](float v, int64_t j) {
    if (v != -INFINITY) sum += __expf(v - block_max);
    const uint64_t e = entry(v, j);
    if (e >= at_least) {
      const int slot = atomicAdd(&count, 1);
      if (slot < K * kListPerThread) list[slot] = e;
    }
  });
  sum = block_reduce::block_sum(sum, scratch);  // its barriers also order the list's writes
  float row_max = block_max;
  if constexpr (C == 1) {
    block_picks(list, min(count, static_cast<int>(K * kListPerThread)), k, picked);
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The blocks' picks and sums meet in the first block.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x < K) result.picks[threadIdx.x] = 0;
    if (threadIdx.x == 0) result.max = block_max, result.sum = sum;
    __syncthreads();
    block_picks(list, min(count, static_cast<int>(K * kListPerThread)), k, result.picks);
    cluster.sync();
    __shared__ float maxes[C], sums[C];
    uint64_t* merged = list;  // this block's list is read: its picks are in `result` now
    if (part == 0) {
      if (threadIdx.x < C * K)
        merged[threadIdx.x] = cluster.map_shared_rank(&result, threadIdx.x / K)->picks[threadIdx.x % K];
      if (threadIdx.x < C) {
        const BlockResult<K>* r = cluster.map_shared_rank(&result, threadIdx.x);
        maxes[threadIdx.x] = r->max;
        sums[threadIdx.x] = r->sum;
      }
    }
    cluster.sync();  // the other blocks' shared memory stays until the first has read it
    if (part != 0) return;
    block_picks(merged, C * K, k, picked);
    float top = -INFINITY;
    for (int b = 0; b < C; ++b) top = fmaxf(top, maxes[b]);
    float total = 0.0f;
    // A block of only -inf adds nothing; one of NaN and -inf (max -inf, sum NaN) makes the
    // row's sum NaN, as one block a row does.
    for (int b = 0; b < C; ++b)
      if (maxes[b] != -INFINITY || isnan(sums[b])) total += isnan(sums[b]) ? sums[b] : sums[b] * __expf(maxes[b] - top);
    row_max = top;
    sum = total;
#else
    __trap();  // launched only where clusters_supported()
#endif
  }
  if (threadIdx.x >= k) return;
  const uint64_t pick = picked[threadIdx.x];
  const float log_sum = row_max + logf(sum);
  static_cast<float*>(p.values)[row * k + threadIdx.x] = value_of(pick) - log_sum;
  p.indices[row * k + threadIdx.x] = index_of(pick);
}

template <typename T, int K>
void launch_rows(const LogSoftmaxTopkArgs& a, cudaStream_t stream) {
  const int64_t rows = a.topk.view.outer;
  // A block a row leaves SMs idle below about one row per SM; a cluster a row then.
  if (clusters_supported() && rows * kCluster <= multiprocessor_count())
    launch_clustered(log_softmax_topk_block_kernel<T, K, kCluster>, dim3(static_cast<unsigned>(rows * kCluster)),
                     kThreads, kCluster, 0, stream, a);
  else
    launch(log_softmax_topk_block_kernel<T, K, 1>, dim3(static_cast<unsigned>(rows)), kThreads, 0, stream, a);
}

template <typename T>
void launch_typed(const LogSoftmaxTopkArgs& a, cudaStream_t stream) {
  if (a.topk.k <= 8)
    launch_rows<T, 8>(a, stream);
  else if (a.topk.k <= 16)
    launch_rows<T, 16>(a, stream);
  else
    launch_rows<T, 32>(a, stream);
}

}  // namespace

bool log_softmax_topk_block_fits(const LogSoftmaxTopkArgs& a) {
  const TopkArgs& p = a.topk;
  return p.view.inner == 1 && p.largest && p.k >= 1 && p.k <= kMaxK && p.k <= p.view.dim && p.view.dim <= kMaxDim &&
         p.view.outer <= 0x7fffffff / kCluster && (p.type == DType::F32 || p.type == DType::F16);
}

void launch_log_softmax_topk_block(const LogSoftmaxTopkArgs& a, cudaStream_t stream) {
  if (a.topk.view.outer <= 0) return;
  if (a.topk.type == DType::F16)
    launch_typed<__half>(a, stream);
  else
    launch_typed<float>(a, stream);
}

}  // namespace kiln::cuda
