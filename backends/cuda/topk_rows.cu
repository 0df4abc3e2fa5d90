// top-k of long contiguous rows, k <= 32, in levels. A warp takes a segment of 1024 entries (32
// per lane, in registers) and picks its k best in k rounds: a warp-wide first_of over each
// lane's best not yet picked, after which only the lane that gave the winner looks again at its
// own 32. The segments' k-best lists (value, index) are the next level's entries, until one
// segment is left, whose k best are the row's: with a strict total order on (value, index) each
// of the row's k best is among the k best of its segment, so the result is exactly the generic
// kernel's. A vocabulary of 58101 is 57 warps of 16 rounds, then one warp over 912 candidates,
// all rows at once.
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
constexpr int64_t kMaxRows = 65535;  // gridDim.y

__host__ __device__ inline int64_t segments_of(int64_t count) { return (count + kSegment - 1) / kSegment; }

// One level over rows of `count` entries: the row's own values (kRaw, x of type T) or the
// previous level's candidates (keys, indices; index -1 for none). The last level (kFinal)
// writes the op's outputs; the others write k candidates per segment.
template <typename T, bool kRaw, bool kFinal>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    topk_rows_kernel(TopkArgs p, const float* in_keys, const int64_t* in_index, int64_t count, float* out_keys,
                     int64_t* out_index) {
  wait_for_predecessor();
  using R = Ranked<float>;
  const int lane = threadIdx.x % 32;
  const int64_t segment = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t segments = segments_of(count);
  if (segment >= segments) return;  // the whole warp
  const int64_t row = blockIdx.y;
  const bool largest = p.largest;
  const T* x = static_cast<const T*>(p.x) + row * p.view.dim;

  float v[kPerLane];
  int64_t index[kPerLane];
  uint32_t picked = 0;  // entries picked or absent
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int64_t e = segment * kSegment + u * 32 + lane;
    index[u] = -1;
    v[u] = 0.0f;
    if (e < count) {
      if constexpr (kRaw) {
        v[u] = key(x[e]);
        index[u] = e;
      } else {
        v[u] = in_keys[row * count + e];
        index[u] = in_index[row * count + e];
      }
    }
    if (index[u] < 0) picked |= 1u << u;
  }
  int best_u = -1;
  auto lane_best = [&] {
    R best{0.0f, -1};
    best_u = -1;
#pragma unroll
    for (int u = 0; u < kPerLane; ++u) {
      if (picked >> u & 1u) continue;
      const R c{v[u], index[u]};
      if (best.i < 0 || ahead(c, best, largest)) {
        best = c;
        best_u = u;
      }
    }
    return best;
  };
  R mine = lane_best();
  const int64_t out = kFinal ? row * p.k : (row * segments + segment) * p.k;
  for (int64_t j = 0; j < p.k; ++j) {
    R w = mine;
#pragma unroll
    for (int mask = 16; mask > 0; mask /= 2) w = first_of(w, shuffle_xor(w, mask), largest);
    if (w.i >= 0 && w.i == mine.i) {  // indices are unique in a row: this lane gave the winner
      picked |= 1u << best_u;
      mine = lane_best();
    }
    if (lane != 0) continue;
    if constexpr (kFinal) {  // k <= dim: every pick of the last level is an entry
      static_cast<T*>(p.values)[out + j] = x[w.i];
      p.indices[out + j] = w.i;
    } else {
      out_keys[out + j] = w.v;
      out_index[out + j] = w.i;
    }
  }
}

size_t level_bytes(const TopkArgs& p) {
  const int64_t candidates = p.view.outer * segments_of(p.view.dim) * p.k;
  return static_cast<size_t>(candidates) * (sizeof(float) + sizeof(int64_t)) + 8;  // + the indices' alignment
}

}  // namespace

bool topk_rows_fits(const TopkArgs& p) {
  return p.view.inner == 1 && p.k >= 1 && p.k <= kMaxK && p.view.dim > kSegment && p.view.outer <= kMaxRows;
}

size_t topk_rows_workspace_bytes(const TopkArgs& p) {
  return topk_rows_fits(p) ? 2 * ((level_bytes(p) + 255) / 256 * 256) : 0;
}

void launch_topk_rows(const TopkArgs& p, cudaStream_t stream) {
  const int64_t rows = p.view.outer;
  if (rows <= 0) return;
  // Two candidate buffers, [rows, candidates] keys then indices in each: levels alternate.
  const size_t half = (level_bytes(p) + 255) / 256 * 256;
  char* base = static_cast<char*>(p.workspace);
  dispatch_float(p.type, "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto grid = [&](int64_t count) {
      return dim3(static_cast<unsigned>((segments_of(count) + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(rows));
    };
    int64_t count = p.view.dim, level = 0;
    const float* keys = nullptr;
    const int64_t* index = nullptr;
    while (count > kSegment) {
      const int64_t next = segments_of(count) * p.k;
      char* buffer = base + (level % 2) * half;
      auto* out_keys = reinterpret_cast<float*>(buffer);
      auto* out_index =
          reinterpret_cast<int64_t*>(buffer + (static_cast<size_t>(rows * next) * sizeof(float) + 7) / 8 * 8);
      if (level == 0)
        launch(topk_rows_kernel<T, true, false>, grid(count), kWarpsPerBlock * 32, 0, stream, p, keys, index, count,
               out_keys, out_index);
      else
        launch(topk_rows_kernel<T, false, false>, grid(count), kWarpsPerBlock * 32, 0, stream, p, keys, index, count,
               out_keys, out_index);
      keys = out_keys;
      index = out_index;
      count = next;
      ++level;
    }
    launch(topk_rows_kernel<T, false, true>, grid(count), kWarpsPerBlock * 32, 0, stream, p, keys, index, count,
           nullptr, nullptr);
  });
}

}  // namespace kiln::cuda
