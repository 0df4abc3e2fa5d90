// Pointwise convs as GEMMs on mma.sync (m16n8k16, fp16 in, fp32 accumulate), for fp16 and FP8
// layers alike. An FP8 layer's A is rounded to E4M3 as it is staged into shared memory (after the
// squeeze-excite gate) and its E4M3 weights are widened there; E4M3 values are exact in fp16 and
// their products exact in fp32, so the fp16 tensor cores give the FP8 result bit for bit. Hopper
// has no native FP8 mma.sync (NVIDIA: sm_90 runs the Ada m16n8k32 E4M3 instruction by
// converting to fp16 in software); its FP8 tensor cores are reached only through wgmma. The
// epilogue can store the output as E4M3 for an FP8 consumer, which is where FP8 saves bytes.
// The same kernel runs dense k x k convs as implicit GEMMs (kIm2col: A's vectors are read from the
// NHWC input at each tap, zero in the padding, never materialised).
// Own kernel rather than cuBLASLt: cuBLASLt's FP8 GEMMs have no SiLU epilogue, no per-(image, k)
// input gate and no fused input quantisation, so each would cost extra passes over memory.
#include <climits>
#include <type_traits>

#include "backends/cuda/gemm_epilogue.cuh"
#include "backends/cuda/gemm_mma.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/ptx.cuh"

namespace kiln::cuda {

const char* const kMmaTileNames[kMmaTiles] = {"mma_128x64", "mma_64x64", "mma_64x128", "mma_32x64", "mma_128x32"};

namespace {

constexpr int KE = 32;                 // K (halves) per shared-memory row and pipeline stage
constexpr int kRowWords = KE / 2 + 4;  // padded: fragment loads hit 32 different banks

// A block of WARPS_M x WARPS_N warps computes a BM x BN tile, each warp a WM x WN piece of
// 16 x 8 mma tiles. Global loads move 8 elements per vector; the next K stage is loaded into
// registers while the current one is multiplied.
// With kSplit, blockIdx.z takes one KE-aligned slice of K and the block writes raw fp32 partial
// sums to the workspace; gemm.cu's split_k_reduce adds them up and runs the epilogue.
template <int BM, int BN, int WARPS_M, int WARPS_N, bool kFp8, bool kGate, bool kResidual, bool kOutF32, bool kOutE4M3,
          bool kIm2col = false, bool kSplit = false>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32) gemm_mma_kernel(GemmArgs p) {
  constexpr int kThreads = WARPS_M * WARPS_N * 32;
  constexpr int kVecsPerRow = KE / 8;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, FM = WM / 16, FN = WN / 8;
  constexpr int A_VECS = BM * kVecsPerRow / kThreads, B_VECS = BN * kVecsPerRow / kThreads;
  static_assert(A_VECS * kThreads == BM * kVecsPerRow && B_VECS * kThreads == BN * kVecsPerRow, "tile/threads");
  constexpr int LDC = BN + 8;  // fp32 output staging after the K loop, in the same memory; padded against conflicts
  constexpr int kTileBytes = (BM + BN) * kRowWords * 4, kOutBytes = BM * LDC * 4;
  __shared__ __align__(16) unsigned char smem[kTileBytes > kOutBytes ? kTileBytes : kOutBytes];
  uint32_t* As = reinterpret_cast<uint32_t*>(smem);
  uint32_t* Bs = As + BM * kRowWords;

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int g = lane / 4, t = lane % 4;
  const int M = p.m, N = p.n, K = p.k;
  const int chunk = kSplit ? ((K + p.splits - 1) / p.splits + KE - 1) / KE * KE : K;
  const int k_begin = kSplit ? blockIdx.z * chunk : 0, k_end = min(K, k_begin + chunk);
  const auto* w8 = static_cast<const uint8_t*>(p.w);
  const auto* w16 = static_cast<const __half*>(p.w);

  float acc[FM][FN][4] = {};
  uint4 ra[A_VECS], rg[kGate ? A_VECS : 1];
  using BVec = std::conditional_t<kFp8, uint2, uint4>;
  BVec rb[B_VECS];

  // Implicit GEMM: each thread loads the same rows at every K stage; where their output pixels'
  // windows start, found once. A row past M gets a window start that no tap can reach.
  const Im2col& cv = p.im2col;
  int64_t image_at[kIm2col ? A_VECS : 1];
  int iy0[kIm2col ? A_VECS : 1], ix0[kIm2col ? A_VECS : 1];
  if constexpr (kIm2col) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int gm = m0 + (threadIdx.x + i * kThreads) / kVecsPerRow;
      const int ox = gm % cv.ow, oy = gm / cv.ow % cv.oh, image = gm / (cv.ow * cv.oh);
      image_at[i] = static_cast<int64_t>(image) * cv.h * cv.w;
      iy0[i] = gm < M ? oy * cv.stride_h - cv.pad_top : INT_MIN / 2;
      ix0[i] = ox * cv.stride_w - cv.pad_left;
    }
  }

  auto load_a = [&](int k0) {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, gk = k0 + (idx % kVecsPerRow) * 8;
      const int gm = m0 + row;
      if constexpr (kIm2col) {
        const int tap = gk / cv.c, ci = gk - tap * cv.c, ky = tap / cv.kw, kx = tap - ky * cv.kw;
        const int iy = iy0[i] + ky * cv.dilation_h, ix = ix0[i] + kx * cv.dilation_w;
        const bool in = gk < k_end && iy >= 0 && iy < cv.h && ix >= 0 && ix < cv.w;
        ra[i] = in ? __ldg(reinterpret_cast<const uint4*>(
                         p.a + (image_at[i] + static_cast<int64_t>(iy) * cv.w + ix) * cv.c + ci))
                   : make_uint4(0, 0, 0, 0);
        continue;
      }
      const bool in = gm < M && gk < k_end;
      ra[i] =
          in ? __ldg(reinterpret_cast<const uint4*>(p.a + static_cast<int64_t>(gm) * K + gk)) : make_uint4(0, 0, 0, 0);
      if constexpr (kGate)  // zero past M and K too: 0 x an uninitialised register can be 0 x NaN
        rg[i] =
            in ? __ldg(reinterpret_cast<const uint4*>(p.gate + static_cast<int64_t>(gm / p.rows_per_image) * K + gk))
               : make_uint4(0, 0, 0, 0);
    }
  };
  auto load_b = [&](int k0) {
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, gk = k0 + (idx % kVecsPerRow) * 8;
      const int gn = n0 + row;
      const bool in = gn < N && gk < k_end;
      if constexpr (kFp8)
        rb[i] = in ? __ldg(reinterpret_cast<const uint2*>(w8 + static_cast<int64_t>(gn) * K + gk)) : make_uint2(0, 0);
      else
        rb[i] = in ? __ldg(reinterpret_cast<const uint4*>(w16 + static_cast<int64_t>(gn) * K + gk))
                   : make_uint4(0, 0, 0, 0);
    }
  };
  auto store = [&]() {
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, col = idx % kVecsPerRow;
      Half8 v;
      v.u = ra[i];
      if constexpr (kGate) {  // the gated input is an fp16 tensor, as the unfused scale would write it
        Half8 gv;
        gv.u = rg[i];
#pragma unroll
        for (int e = 0; e < 4; ++e) v.h2[e] = __hmul2(v.h2[e], gv.h2[e]);
      }
      if constexpr (kFp8) v.u = round_to_e4m3(v, p.a_inv_scale);
      *reinterpret_cast<uint4*>(As + row * kRowWords + col * 4) = v.u;
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int idx = threadIdx.x + i * kThreads, row = idx / kVecsPerRow, col = idx % kVecsPerRow;
      if constexpr (kFp8)
        *reinterpret_cast<uint4*>(Bs + row * kRowWords + col * 4) = widen_e4m3(rb[i]);
      else
        *reinterpret_cast<uint4*>(Bs + row * kRowWords + col * 4) = rb[i];
    }
  };

  // The weights are constants (no kernel writes them): the first stage's are loaded before
  // waiting for the predecessor, overlapping its tail (launch.cuh).
  load_b(k_begin);
  wait_for_predecessor();
  load_a(k_begin);
  for (int k0 = k_begin; k0 < k_end; k0 += KE) {
    store();
    __syncthreads();
    if (k0 + KE < k_end) {
      load_a(k0 + KE);
      load_b(k0 + KE);
    }
#pragma unroll
    for (int kw = 0; kw < KE / 2; kw += 8) {  // two mma K steps of 16 halves per stage
      uint32_t a[FM][4], b[FN][2];
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        const uint32_t* r = As + (wm * WM + i * 16 + g) * kRowWords + kw + t;
        a[i][0] = r[0];
        a[i][1] = r[8 * kRowWords];
        a[i][2] = r[4];
        a[i][3] = r[8 * kRowWords + 4];
      }
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        const uint32_t* r = Bs + (wn * WN + j * 8 + g) * kRowWords + kw + t;
        b[j][0] = r[0];
        b[j][1] = r[4];
      }
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) ptx::mma_m16n8k16(acc[i][j], a[i], b[j]);
    }
    __syncthreads();
  }

  // Epilogue in two passes through shared memory: the accumulators (thread (g, t) holds rows g
  // and g + 8, columns 2t and 2t + 1 of each 16 x 8 tile) go in as fp32, scaled; then each
  // thread takes 8 consecutive outputs of a row, so that residual loads and output stores are
  // whole 16-byte (8-byte for E4M3) vectors rather than scattered 2- or 4-byte pieces.
  float* Cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int j = 0; j < FN; ++j) {
    const int col = wn * WN + j * 8 + 2 * t;
    float2 scale = make_float2(1.0f, 1.0f);
    if constexpr (kFp8)
      if (n0 + col < N) scale = __ldg(reinterpret_cast<const float2*>(p.col_scale + n0 + col));
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(Cs + (wm * WM + i * 16 + g + h * 8) * LDC + col) =
            make_float2(acc[i][j][2 * h] * scale.x, acc[i][j][2 * h + 1] * scale.y);
  }
  __syncthreads();
  constexpr int C_VECS = BM * BN / 8 / kThreads;
  static_assert(C_VECS * kThreads * 8 == BM * BN, "tile/threads");
#pragma unroll
  for (int c = 0; c < C_VECS; ++c) {
    const int idx = threadIdx.x + c * kThreads, row = idx / (BN / 8), col = (idx % (BN / 8)) * 8;
    const int gm = m0 + row, gn = n0 + col;
    if (gm >= M || gn >= N) continue;
    const float4* cs = reinterpret_cast<const float4*>(Cs + row * LDC + col);
    const float4 lo = cs[0], hi = cs[1];
    if constexpr (kSplit) {
      float4* w = reinterpret_cast<float4*>(p.workspace + (static_cast<int64_t>(blockIdx.z) * M + gm) * N + gn);
      w[0] = lo;
      w[1] = hi;
    } else {
      float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      store_outputs<kResidual, kOutF32, kOutE4M3>(p, gm, gn, v);
    }
  }
}

template <int BM, int BN, int WARPS_M, int WARPS_N, bool kFp8>
void launch_precision(const GemmArgs& p, cudaStream_t s) {
  const dim3 grid((p.n + BN - 1) / BN, (p.m + BM - 1) / BM);
  constexpr int threads = WARPS_M * WARPS_N * 32;
  const bool gate = p.gate != nullptr, res = p.residual != nullptr;
#define KILN_MMA(G, R, F32, E4M3) \
  launch(gemm_mma_kernel<BM, BN, WARPS_M, WARPS_N, kFp8, G, R, F32, E4M3>, grid, threads, 0, s, p)
  if (p.im2col.active()) {  // fp16 only, no gate (gemm_variant_supports)
    if constexpr (!kFp8) {
      if (p.out_f32)
        launch(gemm_mma_kernel<BM, BN, WARPS_M, WARPS_N, false, false, false, true, false, true>, grid, threads, 0, s,
               p);
      else if (res)
        launch(gemm_mma_kernel<BM, BN, WARPS_M, WARPS_N, false, false, true, false, false, true>, grid, threads, 0, s,
               p);
      else
        launch(gemm_mma_kernel<BM, BN, WARPS_M, WARPS_N, false, false, false, false, false, true>, grid, threads, 0, s,
               p);
    }
    return;
  }
  if (p.out_f32)
    KILN_MMA(false, false, true, false);
  else if (p.out_e4m3)
    KILN_MMA(false, false, false, true);
  else if (gate && res)
    KILN_MMA(true, true, false, false);
  else if (gate)
    KILN_MMA(true, false, false, false);
  else if (res)
    KILN_MMA(false, true, false, false);
  else
    KILN_MMA(false, false, false, false);
#undef KILN_MMA
}

template <int BM, int BN, int WARPS_M, int WARPS_N>
void launch_tile(const GemmArgs& p, cudaStream_t s) {
  if (p.fp8)
    launch_precision<BM, BN, WARPS_M, WARPS_N, true>(p, s);
  else
    launch_precision<BM, BN, WARPS_M, WARPS_N, false>(p, s);
}

template <int BM, int BN, int WARPS_M, int WARPS_N>
void launch_partial_tile(const GemmArgs& p, cudaStream_t s) {
  const dim3 grid((p.n + BN - 1) / BN, (p.m + BM - 1) / BM, p.splits);
  constexpr int threads = WARPS_M * WARPS_N * 32;
  if (p.im2col.active())
    launch(gemm_mma_kernel<BM, BN, WARPS_M, WARPS_N, false, false, false, false, false, true, true>, grid, threads, 0,
           s, p);
  else if (p.gate)
    launch(gemm_mma_kernel<BM, BN, WARPS_M, WARPS_N, false, true, false, false, false, false, true>, grid, threads, 0,
           s, p);
  else
    launch(gemm_mma_kernel<BM, BN, WARPS_M, WARPS_N, false, false, false, false, false, false, true>, grid, threads, 0,
           s, p);
}

}  // namespace

void launch_gemm_mma_partials(const GemmArgs& p, int tile, cudaStream_t s) {
  if (tile == 3)
    launch_partial_tile<32, 64, 2, 2>(p, s);
  else
    launch_partial_tile<64, 64, 2, 2>(p, s);
}

void launch_gemm_mma(const GemmArgs& p, int tile, cudaStream_t s) {
  switch (tile) {
    case 1:
      launch_tile<64, 64, 2, 2>(p, s);
      break;
    case 2:
      launch_tile<64, 128, 2, 4>(p, s);
      break;
    case 3:
      launch_tile<32, 64, 2, 2>(p, s);
      break;
    case 4:
      launch_tile<128, 32, 4, 1>(p, s);
      break;
    default:
      launch_tile<128, 64, 4, 2>(p, s);
  }
}

}  // namespace kiln::cuda
