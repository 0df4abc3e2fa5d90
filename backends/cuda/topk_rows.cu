// top-k of long contiguous rows, k <= 32, in levels. A warp takes a segment of 1024 entries (32
// per lane, in registers) and picks its k best in k rounds: a warp-wide maximum of each lane's
// best not yet picked. Each lane knows its best two; the lane that gave the winner moves its
// second up, and only a lane that wins again with no second known scans its 32 entries (for the
// best two below the one it gave). k picks spread over 32 lanes rarely take three from one lane,
// so a round is mostly the warp maximum: rescanning after every pick, as before, made the first
// level instruction-bound (at 128 rows of a 58101 vocabulary, 126 of a decoder step's 1511 us
// under Nsight Compute on an H200).
// The segments' k-best lists are the next level's entries, until one segment is left, whose k
// best are the row's: with a strict total order on (value, index) each of the row's k best is
// among the k best of its segment, so the result is exactly the generic kernel's. A vocabulary
// of 58101 is 57 warps of 16 rounds, then one warp over 912 candidates, all rows at once.
//
// Entries are packed into one 64-bit word whose unsigned order is that total order, so a round
// is five shuffles and compares of plain integers: an earlier version compared (float, int64)
// pairs with NaN rules at every step, and at 128 rows of a 58101 vocabulary its first level was
// instruction-bound at 0.28 ms on an H200.
#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"
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

// An entry as one word whose unsigned order is ranked.cuh's order: the high half an
// order-preserving key of the value (NaN above every number, -0 equal to +0; complemented when
// the smallest rank first), the low half the complemented index (ties to the lower index).
// 0 stands for none (or picked): with indices below 2^31 no entry packs to 0.
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

__device__ __forceinline__ uint64_t warp_max(uint64_t v) {
#pragma unroll
  for (int mask = 16; mask > 0; mask /= 2) {
    const uint64_t o = __shfl_xor_sync(0xffffffffu, v, mask);
    v = o > v ? o : v;
  }
  return v;
}

// One level over rows of `count` entries: the row's own values (kRaw, x of type T) or the
// previous level's packed candidates. The last level (kFinal) writes the op's outputs; the
// others write k candidates per segment (0 where a segment holds fewer than k).
template <typename T, bool kRaw, bool kFinal>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    topk_rows_kernel(TopkArgs p, const uint64_t* in, int64_t count, uint64_t* out) {
  wait_for_predecessor();
  const int lane = threadIdx.x % 32;
  const int64_t segment = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t segments = segments_of(count);
  if (segment >= segments) return;  // the whole warp
  const int64_t row = blockIdx.y;
  const bool largest = p.largest;
  const T* x = static_cast<const T*>(p.x) + row * p.view.dim;

  uint64_t e[kPerLane];
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int64_t j = segment * kSegment + u * 32 + lane;
    e[u] = 0;
    if (j < count) {
      if constexpr (kRaw)
        e[u] = pack(key(x[j]), j, largest);
      else
        e[u] = in[row * count + j];
    }
  }
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
  for (int64_t j = 0; j < p.k; ++j) {
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
  if (lane >= p.k) return;
  if constexpr (kFinal) {  // k <= dim: every pick of the last level is an entry
    const int64_t i = index_of(chosen);
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

}  // namespace

bool topk_rows_fits(const TopkArgs& p) {
  return p.view.inner == 1 && p.k >= 1 && p.k <= kMaxK && p.view.dim > kSegment && p.view.dim < kMaxDim &&
         p.view.outer <= kMaxRows;
}

size_t topk_rows_workspace_bytes(const TopkArgs& p) { return topk_rows_fits(p) ? 2 * level_bytes(p) : 0; }

void launch_topk_rows(const TopkArgs& p, cudaStream_t stream) {
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
    const uint64_t* in = nullptr;
    while (count > kSegment) {
      uint64_t* out = buffers[level % 2];
      if (level == 0)
        launch(topk_rows_kernel<T, true, false>, grid(count), kWarpsPerBlock * 32, 0, stream, p, in, count, out);
      else
        launch(topk_rows_kernel<T, false, false>, grid(count), kWarpsPerBlock * 32, 0, stream, p, in, count, out);
      in = out;
      count = segments_of(count) * p.k;
      ++level;
    }
    launch(topk_rows_kernel<T, false, true>, grid(count), kWarpsPerBlock * 32, 0, stream, p, in, count, nullptr);
  });
}

}  // namespace kiln::cuda
