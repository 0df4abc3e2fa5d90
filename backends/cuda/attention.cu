// attention with an online softmax: no score matrix in memory, any head dims, on CUDA cores: the
// cases the tensor-core kernel (attention_mma.cu: fp16, 16 rows or more, heads up to 128 wide)
// and the step kernel (attention_step.cu: fewer rows, contiguous q, k and v) do not take.
// A warp per group of R query rows of one (b, h) (R = 4 for 16 rows or more; R = 1 for fewer
// rows: heads over 128 wide, or q, k and v packed in a projection), four warps per
// block, and per 256 columns of the output (blockIdx.y: column chunk; a head dim past 256
// recomputes the scores per chunk). The warp walks the keys its rows may see (j < seen:
// kv_length and the causal limit) 32 at a time, and per row of the group:
//   1. lane l scores key j0 + l: scale * q . k_j (fp32 sums; q is read by every lane at the same
//      address, a broadcast; k_j once for all R rows) + the mask; lanes past `seen` score -inf.
//   2. the warp's max and sum of exp(score - max) update the row's running max and sum (the
//      running sum and the accumulator are rescaled by exp(old max - new max)); a chunk whose
//      keys are all -inf changes nothing and is skipped, so the max stays -inf until a key counts.
//   3. for each key t of the chunk, every lane reads v[t][c] for its columns c = chunk + lane + 32u,
//      u < 8 (coalesced rows of v, read once for the R rows), and adds weight * v[t][c], the
//      row's weight shuffled from lane t.
// At the end y = acc / sum, or zeros where no key counted (the max is still -inf).
// Control flow is uniform over a warp (the row, seen, the chunk max are the warp's), so the
// full-mask shuffles are safe; warps share nothing, so there is no block barrier.
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/alignment.cuh"
#include "backends/cuda/attention.cuh"
#include "backends/cuda/attention_mma.cuh"
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

constexpr int kWarps = 4;                // query rows per block
constexpr int kColumns = 256;            // output columns per warp
constexpr int kPerLane = kColumns / 32;  // accumulators per lane
constexpr unsigned kFull = 0xffffffffu;

// score[r] = q_r . k in fp32 for the query rows q_r = q + r * q_row, r < rows <= R (zeros for the
// other rows, and where !valid: the lane's key is past the keys walked; k is not read then). Aligned fp16 rows of a
// multiple of 8 (every head size in use) are read 16 bytes at a time: each lane walks its own key's row, so scalar
// loads would touch 32 rows per instruction eight times as often; every q_r is read by all lanes at the same address (a
// broadcast).
template <typename T, int R>
__device__ __forceinline__ void dot_products(const T* q, int64_t q_row, const T* k, int64_t d, bool valid, int rows,
                                             float (&score)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) score[r] = 0.0f;
  if (!valid) return;
  if constexpr (std::is_same_v<T, __half>) {
    if (d % 8 == 0 && q_row % 8 == 0 && aligned16(q, k)) {
      for (int64_t c = 0; c < d; c += 8) {
        Half8 b;
        b.u = *reinterpret_cast<const uint4*>(k + c);
        float2 kf[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) kf[e] = __half22float2(b.h2[e]);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (r >= rows) break;
          Half8 a;
          a.u = *reinterpret_cast<const uint4*>(q + r * q_row + c);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float2 x = __half22float2(a.h2[e]);
            score[r] = fmaf(x.x, kf[e].x, score[r]);
            score[r] = fmaf(x.y, kf[e].y, score[r]);
          }
        }
      }
      return;
    }
  }
  for (int64_t c = 0; c < d; ++c) {
    const float kc = to_f32(k[c]);
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (r < rows) score[r] = fmaf(to_f32(q[r * q_row + c]), kc, score[r]);
  }
}

template <typename T, typename M, int R>
__global__ void attention_kernel(AttentionArgs p) {
  wait_for_predecessor();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t groups = (p.sq + R - 1) / R;  // row groups per (batch, head)
  const int64_t group = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (group >= p.batch * p.heads * groups) return;  // the whole warp
  const int64_t b = group / (p.heads * groups), h = group / groups % p.heads, i0 = group % groups * R;
  const int64_t g = h / (p.heads / p.kv_heads);
  const int64_t len = kv_limit(p, b, h == 0 && i0 == 0 && lane == 0 && blockIdx.y == 0);
  // Keys row i0 + r sees: j < seen[r] (0 for rows past sq); the warp walks up to the most any sees.
  int64_t seen[R], walk = 0;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    seen[r] = i0 + r < p.sq ? keys_seen(p, i0 + r, len) : 0;
    walk = seen[r] > walk ? seen[r] : walk;
  }
  const int rows = p.sq - i0 < R ? static_cast<int>(p.sq - i0) : R;  // rows of the group inside sq
  const T* q = static_cast<const T*>(p.q) + b * p.q_layout.batch + h * p.q_layout.head + i0 * p.q_layout.row;
  const int64_t base = kv_base(p, b);  // the row of k and v that k and v point into
  const T* k = static_cast<const T*>(p.k) + base * p.k_layout.batch + g * p.k_layout.head;
  const T* v = static_cast<const T*>(p.v) + base * p.v_layout.batch + g * p.v_layout.head;
  const M* mask =
      p.mask ? static_cast<const M*>(p.mask) + b * p.mask_strides[0] + h * p.mask_strides[1] + i0 * p.mask_strides[2]
             : nullptr;
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * kColumns + lane;
  float acc[R][kPerLane] = {};
  float max[R], sum[R];
#pragma unroll
  for (int r = 0; r < R; ++r) max[r] = -INFINITY, sum[r] = 0.0f;
  for (int64_t j0 = 0; j0 < walk; j0 += 32) {
    const int64_t j = j0 + lane;
    float score[R];
    const int64_t from = j < walk ? kv_batch(p, b, j) : base;  // the row of k and v holding this lane's key
    dot_products<T, R>(q, p.q_layout.row, k + (from - base) * p.k_layout.batch + j * p.k_layout.row, p.d, j < walk,
                       rows, score);
    float weight[R];
    bool any = false;  // whether a row of the warp has a key in this chunk (uniform over the warp)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      score[r] = j < seen[r] ? p.scale * score[r] : -INFINITY;
      if (mask && j < seen[r]) score[r] += to_f32(mask[r * p.mask_strides[2] + j * p.mask_strides[3]]);
      const float chunk_max = warp_max(score[r]);
      weight[r] = 0.0f;
      if (chunk_max == -INFINITY) continue;  // nothing changes for this row
      any = true;
      const float new_max = fmaxf(max[r], chunk_max);
      const float rescale = expf(max[r] - new_max);  // 0 while max is -inf (acc and sum are 0 then)
      weight[r] = expf(score[r] - new_max);          // 0 for -inf scores
      sum[r] = sum[r] * rescale + warp_sum(weight[r]);
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) acc[r][u] *= rescale;
      max[r] = new_max;
    }
    if (!any) continue;
    const int keys = walk - j0 < 32 ? static_cast<int>(walk - j0) : 32;
    for (int t = 0; t < keys; ++t) {
      const int64_t from_t = __shfl_sync(kFull, from, t);
      const T* vj = v + (from_t - base) * p.v_layout.batch + (j0 + t) * p.v_layout.row;
      float vt[kPerLane];
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) {
        const int64_t c = c0 + 32 * u;
        vt[u] = c < p.dv ? to_f32(vj[c]) : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float w = __shfl_sync(kFull, weight[r], t);
#pragma unroll
        for (int u = 0; u < kPerLane; ++u) acc[r][u] = fmaf(w, vt[u], acc[r][u]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    T* y = static_cast<T*>(p.y) + b * p.y_layout.batch + h * p.y_layout.head + (i0 + r) * p.y_layout.row;
#pragma unroll
    for (int u = 0; u < kPerLane; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c < p.dv) store(y + c, max[r] == -INFINITY ? 0.0f : acc[r][u] / sum[r]);
    }
  }
}

template <typename T, int R>
void launch_typed(const AttentionArgs& p, cudaStream_t s) {
  const int64_t warps = p.batch * p.heads * ((p.sq + R - 1) / R);
  const dim3 grid(static_cast<unsigned>((warps + kWarps - 1) / kWarps),
                  static_cast<unsigned>((p.dv + kColumns - 1) / kColumns));
  if (p.mask && p.mask_type == DType::F16)
    launch(attention_kernel<T, __half, R>, grid, kWarps * 32, 0, s, p);
  else
    launch(attention_kernel<T, float, R>, grid, kWarps * 32, 0, s, p);
}

template <typename T>
void launch_rows(const AttentionArgs& p, cudaStream_t s) {
  if (attention_mma_fits(p))
    launch_attention_mma(p, s);
  else if (p.sq >= 16)
    launch_typed<T, 4>(p, s);
  else if (!p.packed && attention_step_fits(p))
    launch_attention_step(p, s);
  else
    launch_typed<T, 1>(p, s);
}

}  // namespace

void launch_attention(const AttentionArgs& p, cudaStream_t s) {
  const int64_t rows = p.batch * p.heads * p.sq;
  if (rows <= 0 || p.dv <= 0) return;
  if (p.type == DType::F16)
    launch_rows<__half>(p, s);
  else
    launch_rows<float>(p, s);
}

}  // namespace kiln::cuda
