// Pointwise (1x1) convolutions and linear layers as fp16 tensor-core GEMMs (WMMA, fp32
// accumulate) with the neighbours fused in: the squeeze-excite gate scales A as it is loaded,
// and bias, activation and the residual add happen in the epilogue, so none of them costs a
// pass over memory. cuBLASLt has no SiLU epilogue and no per-(image, k) input scaling.
#include <mma.h>

#include "backends/cuda/gemm_epilogue.cuh"
#include "backends/cuda/gemm_mma.cuh"
#include "backends/cuda/gemm_stream.cuh"
#include "backends/cuda/gemv.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

using namespace nvcuda;

constexpr int BK = 32;
constexpr int LDS = BK + 8;  // padded shared rows (halves) against bank conflicts

// A block of WARPS_M x WARPS_N warps computes a BM x BN tile; each warp a (BM/WARPS_M) x
// (BN/WARPS_N) piece as 16x16 WMMA fragments. With kSplit, blockIdx.z takes one slice of K and
// the block writes raw fp32 partial sums to the workspace; split_k_reduce finishes them.
template <int BM, int BN, int WARPS_M, int WARPS_N, bool kGate, bool kResidual, bool kOutF32, bool kSplit = false>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32) gemm_kernel(GemmArgs p) {
  constexpr int kThreads = WARPS_M * WARPS_N * 32;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, FM = WM / 16, FN = WN / 16;
  constexpr int LDC = BN + 4;
  constexpr int kTileBytes = (BM + BN) * LDS * 2, kOutBytes = BM * LDC * 4;
  __shared__ __align__(128) unsigned char smem[kTileBytes > kOutBytes ? kTileBytes : kOutBytes];
  __half* As = reinterpret_cast<__half*>(smem);
  __half* Bs = As + BM * LDS;

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int M = p.m, N = p.n, K = p.k;
  // This block's slice of K: all of it, or one of p.splits BK-aligned chunks.
  const int chunk = kSplit ? ((K + p.splits - 1) / p.splits + BK - 1) / BK * BK : K;
  const int k_begin = kSplit ? blockIdx.z * chunk : 0, k_end = min(K, k_begin + chunk);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  constexpr int kVecsPerRow = BK / 8;
  constexpr int A_VECS = BM * kVecsPerRow / kThreads, B_VECS = BN * kVecsPerRow / kThreads;
  static_assert(A_VECS >= 1 && B_VECS >= 1, "tile too small for the thread block");
  uint4 ra[A_VECS], rb[B_VECS];

  auto load_a = [&](int k0) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, col = (idx % kVecsPerRow) * 8;
      int gm = m0 + row, gk = k0 + col;
      Half8 v;
      v.u = make_uint4(0, 0, 0, 0);
      if (gm < M && gk < k_end) {
        v.u = __ldg(reinterpret_cast<const uint4*>(p.a + static_cast<int64_t>(gm) * K + gk));
        if constexpr (kGate) {
          Half8 g;
          g.u = __ldg(reinterpret_cast<const uint4*>(p.gate + static_cast<int64_t>(gm / p.rows_per_image) * K + gk));
#pragma unroll
          for (int e = 0; e < 4; ++e) v.h2[e] = __hmul2(v.h2[e], g.h2[e]);
        }
      }
      ra[i] = v.u;
    }
  };
  auto load_b = [&](int k0) {
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, col = (idx % kVecsPerRow) * 8;
      int gn = n0 + row, gk = k0 + col;
      rb[i] = (gn < N && gk < k_end) ? __ldg(reinterpret_cast<const uint4*>(static_cast<const __half*>(p.w) +
                                                                            static_cast<int64_t>(gn) * K + gk))
                                     : make_uint4(0, 0, 0, 0);
    }
  };
  auto store = [&]() {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, col = (idx % kVecsPerRow) * 8;
      *reinterpret_cast<uint4*>(As + row * LDS + col) = ra[i];
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, col = (idx % kVecsPerRow) * 8;
      *reinterpret_cast<uint4*>(Bs + row * LDS + col) = rb[i];
    }
  };

  // The weights are constants (no kernel writes them): the first tile's are loaded before
  // waiting for the predecessor, overlapping its tail (launch.cuh).
  if (k_begin < k_end) load_b(k_begin);
  wait_for_predecessor();
  if (k_begin < k_end) load_a(k_begin);
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    store();
    __syncthreads();
    if (k0 + BK < k_end) {  // the next tile's loads overlap this tile's math
      load_a(k0 + BK);
      load_b(k0 + BK);
    }
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], As + (wm * WM + i * 16) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], Bs + (wn * WN + j * 16) * LDS + kk, LDS);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }

  float* Cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
      wmma::store_matrix_sync(Cs + (wm * WM + i * 16) * LDC + wn * WN + j * 16, acc[i][j], LDC, wmma::mem_row_major);
  __syncthreads();

  constexpr int C_VECS = BM * BN / 8 / kThreads;
#pragma unroll
  for (int i = 0; i < C_VECS; ++i) {
    int idx = threadIdx.x + i * kThreads, row = idx / (BN / 8), col = (idx % (BN / 8)) * 8;
    int gm = m0 + row, gn = n0 + col;
    if (gm >= M || gn >= N) continue;
    float v[8];
    const float4* cs = reinterpret_cast<const float4*>(Cs + row * LDC + col);  // LDC and col keep 16-byte alignment
    const float4 lo = cs[0], hi = cs[1];
    v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
    if constexpr (kSplit) {
      float4* w = reinterpret_cast<float4*>(p.workspace + (static_cast<int64_t>(blockIdx.z) * M + gm) * N + gn);
      w[0] = lo;
      w[1] = hi;
    } else {
      store_outputs<kResidual, kOutF32>(p, gm, gn, v);
    }
  }
}

// Sums the split-K partials of 8 outputs per thread, then the usual epilogue.
template <bool kResidual, bool kOutF32>
__global__ void split_k_reduce(GemmArgs p) {
  wait_for_predecessor();
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int vecs = p.n / 8;
  if (idx >= static_cast<int64_t>(p.m) * vecs) return;
  const int gm = static_cast<int>(idx / vecs), gn = static_cast<int>(idx % vecs) * 8;
  float v[8] = {};
  for (int z = 0; z < p.splits; ++z) {
    const float4* w = reinterpret_cast<const float4*>(p.workspace + (static_cast<int64_t>(z) * p.m + gm) * p.n + gn);
    const float4 lo = w[0], hi = w[1];
    v[0] += lo.x, v[1] += lo.y, v[2] += lo.z, v[3] += lo.w, v[4] += hi.x, v[5] += hi.y, v[6] += hi.z, v[7] += hi.w;
  }
  store_outputs<kResidual, kOutF32>(p, gm, gn, v);
}

template <int BM, int BN, int WARPS_M, int WARPS_N>
void launch_tile(const GemmArgs& p, cudaStream_t s) {
  dim3 grid((p.n + BN - 1) / BN, (p.m + BM - 1) / BM);
  constexpr int threads = WARPS_M * WARPS_N * 32;
  const bool gate = p.gate != nullptr, res = p.residual != nullptr;
  if (p.out_f32) {
    launch(gemm_kernel<BM, BN, WARPS_M, WARPS_N, false, false, true>, grid, threads, 0, s, p);
  } else if (gate && res) {
    launch(gemm_kernel<BM, BN, WARPS_M, WARPS_N, true, true, false>, grid, threads, 0, s, p);
  } else if (gate) {
    launch(gemm_kernel<BM, BN, WARPS_M, WARPS_N, true, false, false>, grid, threads, 0, s, p);
  } else if (res) {
    launch(gemm_kernel<BM, BN, WARPS_M, WARPS_N, false, true, false>, grid, threads, 0, s, p);
  } else {
    launch(gemm_kernel<BM, BN, WARPS_M, WARPS_N, false, false, false>, grid, threads, 0, s, p);
  }
}

// The partial sums of p.splits slices added up, then bias, activation, residual and the store.
void launch_reduce(const GemmArgs& p, cudaStream_t s) {
  const int64_t threads = static_cast<int64_t>(p.m) * (p.n / 8);
  const unsigned blocks = static_cast<unsigned>((threads + 255) / 256);
  const bool res = p.residual != nullptr;
  if (p.out_f32)
    launch(split_k_reduce<false, true>, blocks, 256, 0, s, p);
  else if (res)
    launch(split_k_reduce<true, false>, blocks, 256, 0, s, p);
  else
    launch(split_k_reduce<false, false>, blocks, 256, 0, s, p);
}

// K split over `splits` blocks of a 32 x 64 tile: for small M and long K (batch 1), where one
// block per tile would walk all of K alone.
template <int BM, int BN>
void launch_split(GemmArgs p, int splits, cudaStream_t s) {
  p.splits = splits;
  dim3 grid((p.n + BN - 1) / BN, (p.m + BM - 1) / BM, splits);
  if (p.gate)
    launch(gemm_kernel<BM, BN, 2, 2, true, false, false, true>, grid, 128, 0, s, p);
  else
    launch(gemm_kernel<BM, BN, 2, 2, false, false, false, true>, grid, 128, 0, s, p);
  launch_reduce(p, s);
}

constexpr int kWmmaVariants = 8;
constexpr int kGemvVariant = kWmmaVariants + kMmaTiles;
constexpr int kMmaSplitVariant = kGemvVariant + 1;    // then the mma.sync split-K variants
constexpr int kStreamVariant = kMmaSplitVariant + 2;  // then the short-K streaming ones (gemm_stream.cu)
static_assert(kStreamVariant + kStreamTiles == kGemmVariants);
// K slices per tile variant (1: no split), and the mma tile each split-K mma variant runs.
constexpr int kSplits[kStreamVariant] = {1, 1, 1, 1, 1, 1, 4, 8, 1, 1, 1, 1, 1, 1, 4, 8};
constexpr int kMmaSplitTile[2] = {1, 3};
// Output rows per block of a tile variant: the grid's y dimension counts row tiles (65535 at most).
constexpr int kTileRows[kStreamVariant] = {64, 128, 64, 32, 128, 64, 32, 32, 128, 64, 64, 32, 128, 1, 64, 32};

}  // namespace

size_t gemm_workspace_bytes(const GemmArgs& p, int variant) {
  const int splits = variant >= 0 && variant < kStreamVariant ? kSplits[variant] : 1;
  return splits > 1 ? static_cast<size_t>(splits) * p.m * p.n * sizeof(float) : 0;
}

const char* gemm_variant_name(int variant) {
  static const char* names[kWmmaVariants] = {"wmma_64x64",     "wmma_128x64",    "wmma_64x32",    "wmma_32x64",
                                             "wmma_128x64_w8", "wmma_64x128_w8", "wmma_32x64_k4", "wmma_32x64_k8"};
  if (variant >= 0 && variant < kWmmaVariants) return names[variant];
  if (variant >= kWmmaVariants && variant < kGemvVariant) return kMmaTileNames[variant - kWmmaVariants];
  if (variant == kGemvVariant) return "gemv";
  if (variant == kMmaSplitVariant) return "mma_64x64_k4";
  if (variant == kMmaSplitVariant + 1) return "mma_32x64_k8";
  if (variant >= kStreamVariant && variant < kGemmVariants) return kStreamTileNames[variant - kStreamVariant];
  return "?";
}

// WMMA has no FP8 fragments on sm_90 and writes only fp16 or fp32; an fp32 or E4M3 output takes
// neither a gate nor a residual (the planner never asks for them together).
// An implicit GEMM (a k x k conv) runs on the mma.sync kernels only, in fp16 without a gate.
bool gemm_variant_supports(const GemmArgs& p, int variant) {
  if (variant < 0 || variant >= kGemmVariants) return false;
  if (variant >= kStreamVariant) return gemm_stream_supports(p, variant - kStreamVariant);
  if ((static_cast<int64_t>(p.m) + kTileRows[variant] - 1) / kTileRows[variant] > 65535) return false;
  if ((p.out_f32 || p.out_e4m3) && (p.gate || p.residual)) return false;
  if (variant >= kMmaSplitVariant && (p.fp8 || p.out_e4m3)) return false;
  if (p.im2col.active())
    return variant >= kWmmaVariants && variant != kGemvVariant && !p.fp8 && !p.out_e4m3 && !p.gate &&
           p.im2col.c % 8 == 0;
  if (variant == kGemvVariant) return gemv_supports(p);
  return variant >= kWmmaVariants || (!p.fp8 && !p.out_e4m3);
}

int gemm_default_variant(const GemmArgs& p) {
  if (p.im2col.active()) return kWmmaVariants;
  if (gemv_by_default(p)) return kGemvVariant;
  return p.fp8 || p.out_e4m3 ? kWmmaVariants : 0;
}

void launch_gemm(const GemmArgs& p, int variant, cudaStream_t s) {
  if (variant == kGemvVariant) return launch_gemv(p, s);
  if (variant >= kStreamVariant) return launch_gemm_stream(p, variant - kStreamVariant, s);
  if (variant >= kMmaSplitVariant) {
    GemmArgs q = p;
    q.splits = kSplits[variant];
    launch_gemm_mma_partials(q, kMmaSplitTile[variant - kMmaSplitVariant], s);
    return launch_reduce(q, s);
  }
  if (variant >= kWmmaVariants) return launch_gemm_mma(p, variant - kWmmaVariants, s);
  switch (variant) {
    case 1:
      launch_tile<128, 64, 2, 2>(p, s);
      break;
    case 2:
      launch_tile<64, 32, 2, 2>(p, s);
      break;
    case 3:
      launch_tile<32, 64, 2, 2>(p, s);
      break;
    case 4:
      launch_tile<128, 64, 4, 2>(p, s);
      break;
    case 5:
      launch_tile<64, 128, 2, 4>(p, s);
      break;
    case 6:
    case 7:
      launch_split<32, 64>(p, kSplits[variant], s);
      break;
    default:
      launch_tile<64, 64, 2, 2>(p, s);
  }
}

}  // namespace kiln::cuda
