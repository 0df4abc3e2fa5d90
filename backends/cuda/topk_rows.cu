// top-k of long contiguous rows, k <= 32, in levels. A warp takes a segment of 1024 entries (32
// per lane, in registers) and picks its k best in up to k rounds (as many as it holds): a
// warp-wide maximum of each lane's best not yet picked. Each lane knows its best two; the lane that gave the winner
// moves its second up, and only a lane that wins again with no second known scans its 32 entries (for the best two
// below the one it gave). k picks spread over 32 lanes rarely take three from one lane, so a round is mostly the warp
// maximum: rescanning after every pick, as before, made the first level instruction-bound (at 128 rows of a 58101
// vocabulary, 126 of a decoder step's 1511 us under Nsight Compute on an H200). The segments' k-best lists are the next
// level's entries, until one segment is left, whose k best are the row's: with a strict total order on (value, index)
// each of the row's k best is among the k best of its segment, so the result is exactly the generic kernel's. A
// vocabulary of 58101 with k = 16 is 57 warps of up to 16 rounds, then one warp over 912 candidates, all rows at once.
//
// Entries are packed into one 64-bit word (packed_entry.cuh) whose unsigned order is that order: a round
// is five shuffles and compares of plain integers: an earlier version compared (float, int64)
// pairs with NaN rules at every step, and at 128 rows of a 58101 vocabulary its first level was
// instruction-bound at 0.28 ms on an H200.
//
// log_softmax_topk takes the same levels over the scores x (f16 or f32) rather than their
// log-probabilities: the first level also keeps each segment's max and sum of exp(x - max), and
// ranks banned entries as -inf; the last subtracts the row's log(sum(exp(x))) from the k picks.
// So the [rows, vocabulary] log-probabilities are neither written nor read again (on an H100, at
// 128 rows of a 58101 vocabulary, log_softmax's two kernels took 48 us before the top-k's 80).
//
// It also gives the first level a floor. A pass before it takes each first-level segment's best
// entry (bans applied); with at least k segments, those are k or more distinct entries, so the
// row's k best are all at or above the lowest of them. The first level drops entries below it,
// and every level picks only as many rounds as it has entries left (at most k): a vocabulary's
// rows then leave a segment a few candidates, not 1024, and most of its k rounds, with their
// rescans, are not run. On an H100 at 128 rows of 58101 f16 scores the first level took 75 us
// before the floor; with it, and with loads issued before their use (load_segment), the pass
// takes 17 us and the first level 44.
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/packed_entry.cuh"
#include "backends/cuda/ranked.cuh"
#include "backends/cuda/topk_rows.cuh"

namespace kiln::cuda {

namespace {

constexpr int kPerLane = 32;
constexpr int64_t kSegment = 32 * kPerLane;
constexpr int kWarpsPerBlock = 4;
constexpr int64_t kMaxK = 32;
constexpr int64_t kMaxRows = 65535;            // gridDim.y
constexpr int64_t kMaxDim = int64_t{1} << 31;  // indices fit the packed word's low half

__host__ __device__ inline int64_t segments_of(int64_t count) { return (count + kSegment - 1) / kSegment; }

__device__ __forceinline__ uint64_t warp_min(uint64_t v) {
#pragma unroll
  for (int mask = 16; mask > 0; mask /= 2) {
    const uint64_t o = __shfl_xor_sync(0xffffffffu, v, mask);
    v = o < v ? o : v;
  }
  return v;
}

__device__ __forceinline__ int warp_count(int v) {
#pragma unroll
  for (int mask = 16; mask > 0; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
  return v;
}

// What log_softmax_topk adds to the levels (kSoftmax).
struct SoftmaxPart {
  const void* banned = nullptr;  // [rows, per_row], i32 or i64, -1 padding
  bool banned_i64 = true;
  int64_t per_row = 0;
  uint32_t* error = nullptr;  // a banned index past the row sets error_bit
  uint32_t error_bit = 0;
  float2* stats = nullptr;     // [rows, first-level segments]: max and sum of exp(x - max)
  uint64_t* floors = nullptr;  // [rows, first-level segments]: each one's best entry, or null
  int64_t segments = 0;        // first-level segments per row
};

// Loads this lane's entries of a first-level segment of the row x (of type T), packed; with
// kSoftmax, banned entries rank as -inf and, with kStats, the lane's running max and sum of
// exp(x - max) over its scores (banned ones too, as log_softmax's sum; rescaled as the max
// grows; -inf scores add nothing), and a banned index past the row sets the error bit (once,
// from segment 0).
template <typename T, bool kSoftmax, bool kStats>
__device__ __forceinline__ void load_segment(const TopkArgs& p, const SoftmaxPart& sm, const T* x, int64_t row,
                                             int64_t segment, int64_t count, int lane, uint64_t (&e)[kPerLane],
                                             float& lane_max, float& lane_sum) {
  const bool largest = p.largest;
  // Every load first, then the arithmetic: a load used at once, under its bounds check, was
  // waited for before the next one was issued (on an H100 a pass of just these loads and a
  // maximum took 49 us over 128 rows of 58101 f16 scores, 17 us loading first).
  float raw[kPerLane];
  const int64_t first = segment * kSegment + lane;
  if ((segment + 1) * kSegment <= count) {
#pragma unroll
    for (int u = 0; u < kPerLane; ++u) raw[u] = key(x[first + u * 32]);
  } else {
#pragma unroll
    for (int u = 0; u < kPerLane; ++u) raw[u] = first + u * 32 < count ? key(x[first + u * 32]) : 0.0f;
  }
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int64_t j = first + u * 32;
    e[u] = 0;
    if (j < count) {
      const float v = raw[u];
      e[u] = pack(v, j, largest);
      if constexpr (kStats) {
        if (v > lane_max) {
          lane_sum = lane_sum * expf(lane_max - v) + 1.0f;
          lane_max = v;
        } else if (v != -INFINITY) {
          lane_sum += expf(v - lane_max);  // NaN stays NaN, as in log_softmax
        }
      }
    }
  }
  if constexpr (kSoftmax) {
    // The lane holding a banned entry finds it by a constant register index. The row's bans
    // are loaded 32 at a time, a lane each, and passed round the warp.
    const int64_t base = segment * kSegment;
    for (int64_t b0 = 0; b0 < sm.per_row; b0 += 32) {
      int64_t mine = -1;
      if (b0 + lane < sm.per_row) {
        const int64_t at = row * sm.per_row + b0 + lane;
        mine = sm.banned_i64 ? static_cast<const int64_t*>(sm.banned)[at] : static_cast<const int32_t*>(sm.banned)[at];
      }
      if (kStats && mine >= p.view.dim && segment == 0) atomicOr(sm.error, sm.error_bit);
      const int n = static_cast<int>(min(int64_t{32}, sm.per_row - b0));
      for (int q = 0; q < n; ++q) {
        const int64_t t = __shfl_sync(0xffffffffu, mine, q);
        if (t >= base && t < base + kSegment && t < p.view.dim && (t - base) % 32 == lane) {
#pragma unroll
          for (int u = 0; u < kPerLane; ++u)
            if (u == (t - base) / 32) e[u] = pack(-INFINITY, t, true);
        }
      }
    }
  }
}

// log_softmax_topk's pass before the first level: each segment's best entry (SoftmaxPart::floors).
template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) segment_best_kernel(TopkArgs p, SoftmaxPart sm) {
  wait_for_predecessor();
  const int lane = threadIdx.x % 32;
  const int64_t segment = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (segment >= sm.segments) return;  // the whole warp
  const int64_t row = blockIdx.y;
  uint64_t e[kPerLane];
  float unused_max = 0, unused_sum = 0;
  load_segment<T, true, false>(p, sm, static_cast<const T*>(p.x) + row * p.view.dim, row, segment, p.view.dim, lane, e,
                               unused_max, unused_sum);
  uint64_t best = 0;
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) best = e[u] > best ? e[u] : best;
  best = warp_max(best);
  if (lane == 0) sm.floors[row * sm.segments + segment] = best;
}

// One level over rows of `count` entries: the row's own values (kRaw, x of type T) or the
// previous level's packed candidates. The last level (kFinal) writes the op's outputs; the
// others write k candidates per segment (0 where a segment holds fewer than k).
template <typename T, bool kRaw, bool kFinal, bool kSoftmax = false>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    topk_rows_kernel(TopkArgs p, const uint64_t* in, int64_t count, uint64_t* out, SoftmaxPart sm) {
  wait_for_predecessor();
  const int lane = threadIdx.x % 32;
  const int64_t segment = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t segments = segments_of(count);
  if (segment >= segments) return;  // the whole warp
  const int64_t row = blockIdx.y;
  const T* x = static_cast<const T*>(p.x) + row * p.view.dim;

  uint64_t e[kPerLane];
  float lane_max = -INFINITY, lane_sum = 0.0f;
  if constexpr (kRaw) {
    load_segment<T, kSoftmax, kSoftmax>(p, sm, x, row, segment, count, lane, e, lane_max, lane_sum);
  } else {
#pragma unroll
    for (int u = 0; u < kPerLane; ++u) {
      const int64_t j = segment * kSegment + u * 32 + lane;
      e[u] = j < count ? in[row * count + j] : 0;
    }
  }
  if constexpr (kRaw && kSoftmax) {
    // The segment's max and sum; a segment of nothing but -inf adds nothing.
    const float max = block_reduce::warp_max(lane_max);
    const float sum = block_reduce::warp_sum(lane_max == -INFINITY ? 0.0f : lane_sum * expf(lane_max - max));
    if (lane == 0) sm.stats[row * sm.segments + segment] = make_float2(max, sum);
    if (sm.floors) {  // entries below the floor are not among the row's k best
      uint64_t floor = ~uint64_t{0};
      for (int64_t c = lane; c < sm.segments; c += 32) floor = min(floor, sm.floors[row * sm.segments + c]);
      floor = warp_min(floor);
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) e[u] = e[u] < floor ? 0 : e[u];
    }
  }
  // As many rounds as entries (0: none), up to k.
  int held = 0;
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) held += e[u] != 0;
  const int64_t rounds = min(p.k, static_cast<int64_t>(warp_count(held)));
  // This lane's best two entries (below `below` unless `all`; 0: none).
  uint64_t first = 0, second = 0;
  auto best_two = [&](bool all, uint64_t below) {
    first = second = 0;
#pragma unroll
    for (int u = 0; u < kPerLane; ++u) {
      const uint64_t v = all || e[u] < below ? e[u] : 0;
      second = v > first ? first : (v > second ? v : second);
      first = v > first ? v : first;
    }
  };
  best_two(true, 0);
  bool second_known = true;
  uint64_t chosen = 0;  // lane j keeps pick j
  for (int64_t j = 0; j < rounds; ++j) {
    const uint64_t w = warp_max(first);
    if (lane == j) chosen = w;
    if (w != 0 && w == first) {  // entries are unique: this lane gave the winner
      if (second_known) {
        first = second;
        second_known = false;
      } else {
        best_two(false, w);
        second_known = true;
      }
    }
  }
  float log_sum = 0.0f;
  if constexpr (kFinal && kSoftmax) {  // the row's log(sum(exp(x))) from its segments' stats
    const float2* st = sm.stats + row * sm.segments;
    float max = -INFINITY;
    for (int64_t c = lane; c < sm.segments; c += 32) max = fmaxf(max, st[c].x);
    max = block_reduce::warp_max(max);
    float sum = 0.0f;
    for (int64_t c = lane; c < sm.segments; c += 32)
      if (st[c].x != -INFINITY) sum += st[c].y * expf(st[c].x - max);
    log_sum = max + logf(block_reduce::warp_sum(sum));
  }
  if (lane >= p.k) return;
  if constexpr (kFinal) {  // k <= dim: every pick of the last level is an entry
    const int64_t i = index_of(chosen);
    if constexpr (kSoftmax)
      static_cast<float*>(p.values)[row * p.k + lane] = value_of(chosen) - log_sum;
    else
      static_cast<T*>(p.values)[row * p.k + lane] = x[i];
    p.indices[row * p.k + lane] = i;
  } else {
    out[(row * segments + segment) * p.k + lane] = chosen;
  }
}

size_t level_bytes(const TopkArgs& p) {
  const size_t bytes = static_cast<size_t>(p.view.outer * segments_of(p.view.dim) * p.k) * sizeof(uint64_t);
  return (bytes + 255) / 256 * 256;
}

// Each first-level segment's stats (float2), then its best entry (uint64_t).
size_t per_segment_bytes(const TopkArgs& p) {
  return static_cast<size_t>(p.view.outer * segments_of(p.view.dim)) * (sizeof(float2) + sizeof(uint64_t));
}

template <bool kSoftmax>
void launch_levels(const TopkArgs& p, const SoftmaxPart& sm, cudaStream_t stream) {
  const int64_t rows = p.view.outer;
  if (rows <= 0) return;
  // Two candidate buffers of [rows, candidates] words: levels alternate between them.
  uint64_t* buffers[2] = {static_cast<uint64_t*>(p.workspace),
                          static_cast<uint64_t*>(p.workspace) + level_bytes(p) / sizeof(uint64_t)};
  dispatch_float(p.type, "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto grid = [&](int64_t count) {
      return dim3(static_cast<unsigned>((segments_of(count) + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(rows));
    };
    int64_t count = p.view.dim, level = 0;
    if constexpr (kSoftmax)
      if (sm.floors) launch(segment_best_kernel<T>, grid(count), kWarpsPerBlock * 32, 0, stream, p, sm);
    const uint64_t* in = nullptr;
    while (count > kSegment) {
      uint64_t* out = buffers[level % 2];
      if (level == 0)
        launch(topk_rows_kernel<T, true, false, kSoftmax>, grid(count), kWarpsPerBlock * 32, 0, stream, p, in, count,
               out, sm);
      else
        launch(topk_rows_kernel<T, false, false, kSoftmax>, grid(count), kWarpsPerBlock * 32, 0, stream, p, in, count,
               out, sm);
      in = out;
      count = segments_of(count) * p.k;
      ++level;
    }
    launch(topk_rows_kernel<T, false, true, kSoftmax>, grid(count), kWarpsPerBlock * 32, 0, stream, p, in, count,
           nullptr, sm);
  });
}

}  // namespace

bool topk_rows_fits(const TopkArgs& p) {
  return p.view.inner == 1 && p.k >= 1 && p.k <= kMaxK && p.view.dim > kSegment && p.view.dim < kMaxDim &&
         p.view.outer <= kMaxRows;
}

size_t topk_rows_workspace_bytes(const TopkArgs& p) { return topk_rows_fits(p) ? 2 * level_bytes(p) : 0; }

void launch_topk_rows(const TopkArgs& p, cudaStream_t stream) { launch_levels<false>(p, SoftmaxPart{}, stream); }

size_t log_softmax_topk_rows_workspace_bytes(const LogSoftmaxTopkArgs& a) {
  return topk_rows_fits(a.topk) ? 2 * level_bytes(a.topk) + per_segment_bytes(a.topk) : 0;
}

void launch_log_softmax_topk_rows(const LogSoftmaxTopkArgs& a, cudaStream_t stream) {
  SoftmaxPart sm;
  sm.banned = a.per_row > 0 ? a.banned : nullptr;
  sm.banned_i64 = a.banned_type == DType::I64;
  sm.per_row = sm.banned ? a.per_row : 0;
  sm.error = a.error;
  sm.error_bit = a.error_bit;
  sm.segments = segments_of(a.topk.view.dim);
  sm.stats = reinterpret_cast<float2*>(static_cast<uint8_t*>(a.topk.workspace) + 2 * level_bytes(a.topk));
  // A floor needs k segments' bests (k distinct entries at or above it).
  if (sm.segments >= a.topk.k) sm.floors = reinterpret_cast<uint64_t*>(sm.stats + a.topk.view.outer * sm.segments);
  launch_levels<true>(a.topk, sm, stream);
}

}  // namespace kiln::cuda
