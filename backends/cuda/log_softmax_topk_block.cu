// log_softmax_topk in one launch, a block (or a cluster of blocks) a row: for a decoder's
// vocabulary (rows of at most 65536 entries) and k <= 32. topk_rows.cu's levels take three
// launches (each segment's best, a first level of per-segment picks, the picks' picks), each
// reading the row or the last one's candidates from memory; at one row (a greedy step) those
// launches, not the bytes, are the time, and at 128 rows the first level's rounds are.
//
// A block of 512 threads takes its part of a row, each thread the entries j = part * 512 +
// thread, then every C * 512 further (a warp's loads coalesced; C = 1, or the cluster's size
// where few rows would leave most of the GPU idle), in two passes (the second reads the row
// from L1/L2):
//   1. each thread's best entry (packed_entry.cuh, bans ranked -inf) and largest score; the
//      block's maximum, and a floor: the k-th best of its threads' bests. Those are k distinct
//      entries at or above it, so the block's k best are all at or above it too.
//   2. the sum of exp(x - maximum) over the block's entries (banned scores too, as
//      log_softmax's sum; -inf adds nothing), and every entry at or above the floor appended to
//      a list in shared memory. Only the k threads whose best is at or above the floor hold such
//      entries: at most k * 128 of them (the capacity), a few more than k in a row of real scores.
// Then one warp picks the list's k best, largest first. In a cluster, the first block then
// reads the others' picks and sums from their shared memory and picks again. Last, the row's
// log(sum(exp(x))) = maximum + log(sum) is subtracted from the picks. Banned entries come from
// the row's list through a bitmap in shared memory (65536 entries: 8 KB). The picks are exactly
// those of topk_rows.cu's levels (the same total order on packed words); only the sum's
// rounding differs.
#include <cooperative_groups.h>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/log_softmax_topk_block.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/packed_entry.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int64_t kMaxDim = 65536;
constexpr int64_t kPerThread = kMaxDim / kThreads;  // entries a thread takes, at most
constexpr int64_t kMaxK = 32;
constexpr int kCluster = 8;  // blocks a row where rows are few (the portable cluster size)
constexpr int kUnroll = 8;   // loads in flight per thread

// The k largest of the n words at s (k <= 32; words distinct, 0 none), largest first: pick j goes
// to lane j, and 0 to lanes past the picks there are. Each round is the largest word below the
// last pick. Every lane of the warp calls.
__device__ uint64_t warp_picks(const uint64_t* s, int n, int64_t k, int lane) {
  uint64_t last = 0, mine = 0;
  for (int64_t r = 0; r < k; ++r) {
    uint64_t best = 0;
    for (int i = lane; i < n; i += 32) {
      const uint64_t e = s[i];
      best = (r == 0 || e < last) && e > best ? e : best;
    }
    last = warp_max(best);
    if (lane == r) mine = last;
    if (last == 0) break;  // uniform over the warp
  }
  return mine;
}

__device__ __forceinline__ bool banned_at(const uint32_t* bits, int64_t j) { return (bits[j >> 5] >> (j & 31)) & 1u; }

// What a block leaves for its cluster's first block.
template <int K>
struct BlockResult {
  uint64_t picks[K];
  float max, sum;
};

// K: at least k (8, 16 or 32), the list's capacity in multiples of kPerThread; C: blocks a row.
template <typename T, int K, int C>
__global__ void __launch_bounds__(kThreads) log_softmax_topk_block_kernel(LogSoftmaxTopkArgs a) {
  __shared__ uint32_t bits[kMaxDim / 32];
  __shared__ uint64_t list[K * kPerThread];
  __shared__ uint64_t warp_bests[kThreads / 32 * K];  // k per warp
  __shared__ float scratch[32];
  __shared__ uint64_t floor_word;
  __shared__ int count;
  __shared__ BlockResult<K> result;
  const TopkArgs& p = a.topk;
  const int64_t n = p.view.dim, row = blockIdx.x / C, part = blockIdx.x % C, k = p.k;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t w = threadIdx.x; w < (n + 31) / 32; w += kThreads) bits[w] = 0;
  if (threadIdx.x == 0) count = 0;
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
  for (int64_t j0 = first; j0 < n; j0 += kUnroll * stride) {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = j0 + u * stride < n ? to_float(x[j0 + u * stride]) : -INFINITY;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = j0 + u * stride;
      if (j >= n) continue;
      high = fmaxf(high, v[u]);  // NaN left out here: it makes the sum NaN below
      const uint64_t e = entry(v[u], j);
      best = e > best ? e : best;
    }
  }
  const float block_max = block_reduce::block_reduce<true>(high, scratch);
  // The warp's k best of its threads' bests (0 past them), then warp 0 takes the k-th best of all.
  uint64_t mine = best;
  for (int64_t r = 0; r < k; ++r) {
    const uint64_t w = warp_max(mine);
    if (lane == 0) warp_bests[warp * k + r] = w;
    if (mine == w) mine = 0;
  }
  __syncthreads();
  if (warp == 0) {
    const uint64_t pick = warp_picks(warp_bests, static_cast<int>(kThreads / 32 * k), k, lane);
    const uint64_t kth = __shfl_sync(0xffffffffu, pick, static_cast<int>(k - 1));
    if (lane == 0) floor_word = kth;  // 0 where fewer than k threads hold entries: all are listed
  }
  __syncthreads();

  // Pass 2: the sum, and the entries at or above the floor.
  const uint64_t at_least = floor_word;
  float sum = 0.0f;
  for (int64_t j0 = first; j0 < n; j0 += kUnroll * stride) {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = j0 + u * stride < n ? to_float(x[j0 + u * stride]) : -INFINITY;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = j0 + u * stride;
      if (j >= n) continue;
      if (v[u] != -INFINITY) sum += __expf(v[u] - block_max);
      const uint64_t e = entry(v[u], j);
      if (e >= at_least) {
        const int slot = atomicAdd(&count, 1);
        if (slot < K * kPerThread) list[slot] = e;
      }
    }
  }
  sum = block_reduce::block_sum(sum, scratch);  // its barriers also order the list's writes
  uint64_t pick = 0;
  float row_max = block_max;
  if (warp == 0) pick = warp_picks(list, min(count, static_cast<int>(K * kPerThread)), k, lane);
  if constexpr (C > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The blocks' picks and sums meet in the first block's warp 0.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    if (warp == 0) {
      if (lane < K) result.picks[lane] = lane < k ? pick : 0;
      if (lane == 0) result.max = block_max, result.sum = sum;
    }
    cluster.sync();
    if (part == 0 && warp == 0) {
      uint64_t* merged = list;  // this block's list is read: its picks are in `result` now
      float top = -INFINITY;
      for (int b = 0; b < C; ++b) top = fmaxf(top, cluster.map_shared_rank(&result, b)->max);
      float total = 0.0f;
      for (int b = 0; b < C; ++b) {
        const BlockResult<K>* r = cluster.map_shared_rank(&result, b);
        if (lane < K) merged[b * K + lane] = r->picks[lane];
        // A block of only -inf adds nothing; one of NaN and -inf (max -inf, sum NaN) makes the
        // row's sum NaN, as one block a row does.
        if (r->max != -INFINITY || isnan(r->sum)) total += isnan(r->sum) ? r->sum : r->sum * __expf(r->max - top);
      }
      __syncwarp();
      pick = warp_picks(merged, C * K, k, lane);
      row_max = top;
      sum = total;
    }
    cluster.sync();  // the other blocks' shared memory stays until the first has read it
    if (part != 0) return;
#else
    __trap();  // launched only where clusters_supported()
#endif
  }
  if (warp != 0 || lane >= k) return;
  const float log_sum = row_max + logf(sum);
  static_cast<float*>(p.values)[row * k + lane] = value_of(pick) - log_sum;
  p.indices[row * k + lane] = index_of(pick);
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
