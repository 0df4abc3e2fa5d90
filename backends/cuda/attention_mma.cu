// attention on the tensor cores for fp16 with many query rows (image tokens, encoders): the
// forward pass of FlashAttention-2 on mma.sync (m16n8k16, fp16 in, fp32 accumulate). A block of
// four warps takes 64 query rows of one (batch, head), a warp 16 of them, and walks the keys its
// rows may see (kv_length, causal) 64 at a time:
//   1. the K and V tiles [64 keys][d] go to shared memory by cp.async, zeros past the keys walked
//      and past d (so heads narrower than the kernel's width pad with zeros); K's next tile is in
//      flight during this tile's softmax and P V, V's next during the next tile's scores;
//   2. S = Q K^T, 16 rows x 64 keys per warp, Q's fragments held in registers throughout;
//   3. scores scaled, masked (keys past a row's `seen` are -inf, plus the mask input) and folded
//      into the row's running max and sum (the online softmax; exp2 of the differences times
//      log2(e): scaling the scores by log2(e) first would turn a finite mask of -FLT_MAX into
//      -inf), the output rescaled;
//   4. O += P V, P rounded to fp16: S's accumulator fragments, packed in pairs, are exactly the A
//      fragments of the next mma, so P never leaves registers.
// A row that sees no key gives zeros, as attention.cu does. The shorter cases stay on CUDA cores:
// under 16 rows the scores are too few to fill a 16-row mma tile.
#include <climits>
#include <cstdint>

#include "backends/cuda/alignment.cuh"
#include "backends/cuda/attention_mma.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/ptx.cuh"

namespace kiln::cuda {

namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows per block
constexpr int kKeys = 64;           // keys per tile
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kRows == kKeys, "Q's tile is staged into K's buffer, as a K tile");

// Rows [0, rows) x halves [0, width) of src (row stride `stride` halves) into dst, [kKeys][W + 8]
// halves (rows padded by 16 bytes: ldmatrix's eight row addresses then fall in different banks),
// zeros elsewhere. width is a multiple of 8.
template <int W>
__device__ __forceinline__ void stage(__half* dst, const __half* src, int64_t stride, int64_t rows, int64_t width) {
  constexpr int kVecs = W / 8;
  for (int at = threadIdx.x; at < kKeys * kVecs; at += kThreads) {
    const int r = at / kVecs, c = at % kVecs * 8;
    const bool in = r < rows && c < width;
    ptx::copy_async16(dst + r * (W + 8) + c, in ? src + r * stride + c : src, in ? 16 : 0);
  }
}

// D, DV: d and dv rounded up to 32, 64 or 128. M: the mask's element type.
template <typename M, int D, int DV>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(AttentionArgs p) {
  __shared__ __align__(16) __half ks[kKeys * (D + 8)];  // Q's tile first, then K's
  __shared__ __align__(16) __half vs[kKeys * (DV + 8)];
  wait_for_predecessor();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads, kv_head = h / (p.heads / p.kv_heads);
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int64_t len = kv_limit(p, b, h == 0 && blockIdx.y == 0 && threadIdx.x == 0);
  const int64_t last = (i0 + kRows < p.sq ? i0 + kRows : p.sq) - 1;
  const int64_t walk = keys_seen(p, last, len);  // the most keys a row of the block sees
  // This lane's accumulators hold rows i0 + 16 warp + g (r = 0) and 8 below (r = 1).
  int64_t row[2], seen[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row[r] = i0 + 16 * warp + g + 8 * r;
    seen[r] = row[r] < p.sq ? keys_seen(p, row[r], len) : 0;
  }
  const __half* q = static_cast<const __half*>(p.q) + b * p.q_layout.batch + h * p.q_layout.head + i0 * p.q_layout.row;
  const __half* k = static_cast<const __half*>(p.k) + b * p.k_layout.batch + kv_head * p.k_layout.head;
  const __half* v = static_cast<const __half*>(p.v) + b * p.v_layout.batch + kv_head * p.v_layout.head;
  const M* mask = p.mask ? static_cast<const M*>(p.mask) + b * p.mask_strides[0] + h * p.mask_strides[1] : nullptr;

  // Q's A fragments, read once through shared memory: lane l addresses row l % 16 of the warp's
  // 16, columns 8 (l / 16) on.
  stage<D>(ks, q, p.q_layout.row, p.sq - i0, p.d);
  ptx::copy_async_commit();
  ptx::copy_async_wait<0>();
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ptx::ldmatrix_x4(qf[kk], ks + (16 * warp + lane % 16) * (D + 8) + kk * 16 + lane / 16 * 8);
  __syncthreads();

  float o[DV / 8][4] = {};
  float max[2] = {-INFINITY, -INFINITY}, sum[2] = {0.0f, 0.0f};  // sum: this lane's share of the row's
  const int64_t tiles = (walk + kKeys - 1) / kKeys;
  if (tiles > 0) {
    stage<D>(ks, k, p.k_layout.row, walk, p.d);
    ptx::copy_async_commit();
    stage<DV>(vs, v, p.v_layout.row, walk, p.dv);
    ptx::copy_async_commit();
  }
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int64_t j0 = tile * kKeys;
    ptx::copy_async_wait<1>();  // K's tile is in; V's may still be on its way
    __syncthreads();
    // S: n-tile n covers keys j0 + 8n .. + 7. ldmatrix's four matrices are keys 0-7 and 8-15 of a
    // pair of n-tiles, each at d columns 0-7 and 8-15 of the k-step: lane l addresses key
    // 8 (l / 16) + l % 8, column 8 ((l / 8) % 2).
    float s[kKeys / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int n = 0; n < kKeys / 8; n += 2) {
        uint32_t kb[4];
        ptx::ldmatrix_x4(kb, ks + (8 * n + lane / 16 * 8 + lane % 8) * (D + 8) + kk * 16 + lane / 8 % 2 * 8);
        ptx::mma_m16n8k16(s[n], qf[kk], {kb[0], kb[1]});
        ptx::mma_m16n8k16(s[n + 1], qf[kk], {kb[2], kb[3]});
      }
    __syncthreads();  // every warp is done with this K tile
    if (tile + 1 < tiles) stage<D>(ks, k + (j0 + kKeys) * p.k_layout.row, p.k_layout.row, walk - j0 - kKeys, p.d);
    ptx::copy_async_commit();  // an empty group at the end keeps the count of groups in flight

    // Lane element e of n-tile n is row r = e / 2, key j0 + 8n + 2t + e % 2.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
        for (int e = 2 * r; e < 2 * r + 2; ++e) {
          const int64_t j = j0 + 8 * n + 2 * t + e % 2;
          float x = -INFINITY;
          if (j < seen[r]) {
            x = p.scale * s[n][e];
            if (mask) x += static_cast<float>(mask[row[r] * p.mask_strides[2] + j * p.mask_strides[3]]);
          }
          s[n][e] = x;
          tile_max = fmaxf(tile_max, x);
        }
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float new_max = fmaxf(max[r], tile_max);
      const float base = new_max == -INFINITY ? 0.0f : new_max;  // no key yet: weights exp2(-inf) = 0
      const float rescale = exp2f((max[r] - base) * kLog2e);     // 0 while max is -inf (o and sum are 0)
      float tile_sum = 0.0f;
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
        for (int e = 2 * r; e < 2 * r + 2; ++e) {
          s[n][e] = exp2f((s[n][e] - base) * kLog2e);
          tile_sum += s[n][e];
        }
      sum[r] = sum[r] * rescale + tile_sum;
      max[r] = new_max;
#pragma unroll
      for (int n = 0; n < DV / 8; ++n) o[n][2 * r] *= rescale, o[n][2 * r + 1] *= rescale;
    }
    // P's A fragments: keys 16 kk .. + 15 are n-tiles 2 kk (columns 0-7) and 2 kk + 1 (8-15).
    uint32_t pf[kKeys / 16][4];
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      pf[kk][0] = ptx::pack_half2(s[2 * kk][0], s[2 * kk][1]);
      pf[kk][1] = ptx::pack_half2(s[2 * kk][2], s[2 * kk][3]);
      pf[kk][2] = ptx::pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pf[kk][3] = ptx::pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }

    ptx::copy_async_wait<1>();  // V's tile is in; K's next may still be on its way
    __syncthreads();
    // O += P V. V's B fragments come transposed: the four matrices are keys 0-7 and 8-15 of the
    // k-step, each at columns 0-7 and 8-15 of a pair of n-tiles: lane l addresses key
    // 8 ((l / 8) % 2) + l % 8, column 8 (l / 16).
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
      for (int n = 0; n < DV / 8; n += 2) {
        uint32_t vb[4];
        ptx::ldmatrix_x4_trans(vb, vs + (16 * kk + lane / 8 % 2 * 8 + lane % 8) * (DV + 8) + 8 * n + lane / 16 * 8);
        ptx::mma_m16n8k16(o[n], pf[kk], {vb[0], vb[1]});
        ptx::mma_m16n8k16(o[n + 1], pf[kk], {vb[2], vb[3]});
      }
    __syncthreads();  // every warp is done with this V tile
    if (tile + 1 < tiles) stage<DV>(vs, v + (j0 + kKeys) * p.v_layout.row, p.v_layout.row, walk - j0 - kKeys, p.dv);
    ptx::copy_async_commit();
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = sum[r];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    if (row[r] >= p.sq) continue;
    const float inv = max[r] == -INFINITY ? 0.0f : 1.0f / total;
    __half* y = static_cast<__half*>(p.y) + b * p.y_layout.batch + h * p.y_layout.head + row[r] * p.y_layout.row;
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) {
      const int64_t c = 8 * n + 2 * t;
      if (c < p.dv) *reinterpret_cast<__half2*>(y + c) = __floats2half2_rn(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    }
  }
}

constexpr int width_for(int64_t d) { return d <= 32 ? 32 : d <= 64 ? 64 : 128; }

template <typename M, int D>
void launch_dv(const AttentionArgs& p, dim3 grid, cudaStream_t s) {
  switch (width_for(p.dv)) {
    case 32:
      return launch(attention_mma_kernel<M, D, 32>, grid, kThreads, 0, s, p);
    case 64:
      return launch(attention_mma_kernel<M, D, 64>, grid, kThreads, 0, s, p);
    default:
      return launch(attention_mma_kernel<M, D, 128>, grid, kThreads, 0, s, p);
  }
}

template <typename M>
void launch_d(const AttentionArgs& p, dim3 grid, cudaStream_t s) {
  switch (width_for(p.d)) {
    case 32:
      return launch_dv<M, 32>(p, grid, s);
    case 64:
      return launch_dv<M, 64>(p, grid, s);
    default:
      return launch_dv<M, 128>(p, grid, s);
  }
}

}  // namespace

bool attention_mma_fits(const AttentionArgs& p) {
  // Rows of q, k and v are copied 16 bytes at a time: every row starts 16-byte aligned.
  auto in_vectors = [](const AttentionArgs::Layout& l) {
    return l.batch % 8 == 0 && l.head % 8 == 0 && l.row % 8 == 0;
  };
  return p.type == DType::F16 && !p.kv_rows && p.sq >= 16 && p.d % 8 == 0 && p.dv % 8 == 0 && p.d <= 128 &&
         p.dv <= 128 && aligned16(p.q, p.k, p.v, p.y) && in_vectors(p.q_layout) && in_vectors(p.k_layout) &&
         in_vectors(p.v_layout) && in_vectors(p.y_layout) && (p.sq + kRows - 1) / kRows <= 65535 &&
         p.batch * p.heads <= INT32_MAX;
}

void launch_attention_mma(const AttentionArgs& p, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.batch * p.heads), static_cast<unsigned>((p.sq + kRows - 1) / kRows));
  if (p.mask && p.mask_type == DType::F16)
    launch_d<__half>(p, grid, s);
  else
    launch_d<float>(p, grid, s);
}

}  // namespace kiln::cuda
