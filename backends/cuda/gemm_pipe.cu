// GEMMs with a long K on a multi-stage cp.async pipeline, as in the pointwise convs that project
// a squeeze-excited map back to few channels: out[m, n] = act(sum_k (a[m, k] gate[image, k])
// w[n, k] + bias[n]) + residual[m, n], fp16 in and out.
//
// Why a kernel of its own: the tile kernels (gemm.cu, gemm_mma.cu) load the next K stage into
// registers while the current one is multiplied, so each stage of 32 K waits about one memory
// latency, and a project conv walks K of hundreds to thousands that way. Nsight Compute showed
// them at 31% of the DRAM bandwidth with neither memory nor math busy
// (bench/results/2026-12-05-h200-kernel-traffic/). Here A, B and the gate go straight to shared
// memory by cp.async, STAGES - 1 stages ahead of the math, and fragments are read by ldmatrix.
// The gate multiplies A's fragments in registers (rounded to fp16 as the unfused scale would
// store them), from a per-stage copy of the gate rows of the few images a tile's rows span.
#include "backends/cuda/gemm_pipe.cuh"

#include "backends/cuda/gemm_epilogue.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/ptx.cuh"

namespace kiln::cuda {

const char* const kPipeTileNames[kPipeTiles] = {"pipe_128x32", "pipe_64x64"};

namespace {

constexpr int KE = 32;                  // K (halves) per stage: two mma K steps
constexpr int kVecs = KE / 8;           // 16-byte vectors per staged row
constexpr int kRowBytes = KE * 2 + 16;  // padded: the 8 rows an ldmatrix reads fall on distinct banks
constexpr int kGateImages = 4;          // images one gated tile's rows may span
constexpr int kGateRowBytes = KE * 2;
constexpr int kTileRows[kPipeTiles] = {128, 64};

// One stage: A rows, B rows (the weights' output channels), the gate rows; after the pipeline
// the same memory stages the fp32 outputs (padded rows) for 16-byte stores.
template <int BM, int BN, int STAGES>
struct PipeSmem {
  static constexpr int kA = BM * kRowBytes, kB = BN * kRowBytes, kGate = kGateImages * kGateRowBytes;
  static constexpr int kStage = kA + kB + kGate;
  static constexpr int kLdc = BN + 8;  // floats
  static constexpr int kBytes = STAGES * kStage > BM* kLdc * 4 ? STAGES* kStage : BM* kLdc * 4;
};

__device__ __forceinline__ uint32_t scale2(uint32_t x, uint32_t s) {
  const __half2 h = __hmul2(*reinterpret_cast<const __half2*>(&x), *reinterpret_cast<const __half2*>(&s));
  return *reinterpret_cast<const uint32_t*>(&h);
}

// A block of WARPS_M x WARPS_N warps computes a BM x BN tile, each warp a WM x WN piece of 16 x 8
// mma tiles.
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool kGate, bool kResidual>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32) gemm_pipe_kernel(GemmArgs p) {
  using Smem = PipeSmem<BM, BN, STAGES>;
  constexpr int kThreads = WARPS_M * WARPS_N * 32;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, FM = WM / 16, FN = WN / 8;
  static_assert(FN % 2 == 0, "B fragments are read two column tiles at a time");
  constexpr int A_VECS = BM * kVecs / kThreads, B_VECS = (BN * kVecs + kThreads - 1) / kThreads;
  static_assert(A_VECS * kThreads == BM * kVecs && kGateImages * kVecs <= kThreads, "tile/threads");
  extern __shared__ __align__(16) unsigned char smem[];

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int g = lane / 4, t = lane % 4;
  const int M = p.m, N = p.n, K = p.k;
  const int image0 = kGate ? m0 / p.rows_per_image : 0;
  const int images = kGate ? (M + p.rows_per_image - 1) / p.rows_per_image : 0;
  const auto* w = static_cast<const __half*>(p.w);

  // Copies K stage kt into slot kt % STAGES (zeros past M, N, K and the last image) as one
  // commit group. K is a multiple of 8, so a vector is all in or all out.
  auto load_stage = [&](int kt) {
    unsigned char* s = smem + (kt % STAGES) * Smem::kStage;
    const int k0 = kt * KE;
#pragma unroll
    for (int i = 0; i < A_VECS; ++i) {
      const int v = threadIdx.x + i * kThreads, row = v / kVecs, col = (v % kVecs) * 8;
      const bool in = m0 + row < M && k0 + col < K;
      ptx::copy_async16(s + row * kRowBytes + col * 2, p.a + (in ? static_cast<int64_t>(m0 + row) * K + k0 + col : 0),
                        in ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < B_VECS; ++i) {
      const int v = threadIdx.x + i * kThreads, row = v / kVecs, col = (v % kVecs) * 8;
      if (v >= BN * kVecs) break;
      const bool in = n0 + row < N && k0 + col < K;
      ptx::copy_async16(s + Smem::kA + row * kRowBytes + col * 2,
                        w + (in ? static_cast<int64_t>(n0 + row) * K + k0 + col : 0), in ? 16 : 0);
    }
    if constexpr (kGate) {
      if (threadIdx.x < kGateImages * kVecs) {
        const int image = threadIdx.x / kVecs, col = (threadIdx.x % kVecs) * 8;
        const bool in = image0 + image < images && k0 + col < K;
        ptx::copy_async16(s + Smem::kA + Smem::kB + image * kGateRowBytes + col * 2,
                          p.gate + (in ? static_cast<int64_t>(image0 + image) * K + k0 + col : 0), in ? 16 : 0);
      }
    }
    ptx::copy_async_commit();
  };

  // The gate row (image within the tile's first) of this thread's A rows g and g + 8 per tile.
  int gate_row[FM][2] = {};
  if constexpr (kGate)
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) gate_row[i][h] = (m0 + wm * WM + i * 16 + g + 8 * h) / p.rows_per_image - image0;

  wait_for_predecessor();
  const int stages = (K + KE - 1) / KE;
#pragma unroll
  for (int kt = 0; kt < STAGES - 1; ++kt) {
    if (kt < stages)
      load_stage(kt);
    else
      ptx::copy_async_commit();  // an empty group keeps the count the waits below expect
  }

  float acc[FM][FN][4] = {};
  for (int kt = 0; kt < stages; ++kt) {
    ptx::copy_async_wait<STAGES - 2>();
    // Stage kt is in for every thread, and every warp is done with the slot refilled next.
    __syncthreads();
    if (kt + STAGES - 1 < stages)
      load_stage(kt + STAGES - 1);
    else
      ptx::copy_async_commit();
    const unsigned char* s = smem + (kt % STAGES) * Smem::kStage;
#pragma unroll
    for (int ks = 0; ks < KE / 16; ++ks) {
      uint32_t a[FM][4], b[FN][2];
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        // Lanes 0-15: rows 0-15 at k 0-7 of the step; lanes 16-31: the same rows at k 8-15.
        ptx::ldmatrix_x4(a[i], s + (wm * WM + i * 16 + lane % 16) * kRowBytes + ks * 32 + (lane / 16) * 16);
        if constexpr (kGate) {
          // a[0] A(g, 2t..), a[1] A(g + 8, 2t..), a[2] A(g, 8 + 2t..), a[3] A(g + 8, 8 + 2t..)
          const unsigned char* gs = s + Smem::kA + Smem::kB + ks * 32 + t * 4;
          const unsigned char* r0 = gs + gate_row[i][0] * kGateRowBytes;
          const unsigned char* r1 = gs + gate_row[i][1] * kGateRowBytes;
          a[i][0] = scale2(a[i][0], *reinterpret_cast<const uint32_t*>(r0));
          a[i][1] = scale2(a[i][1], *reinterpret_cast<const uint32_t*>(r1));
          a[i][2] = scale2(a[i][2], *reinterpret_cast<const uint32_t*>(r0 + 16));
          a[i][3] = scale2(a[i][3], *reinterpret_cast<const uint32_t*>(r1 + 16));
        }
      }
#pragma unroll
      for (int j = 0; j < FN; j += 2) {
        // Matrices (columns j, k 0-7), (j, k 8-15), (j + 1, k 0-7), (j + 1, k 8-15): lanes 8i..8i+7
        // address matrix i's rows, each a column n of the weights.
        uint32_t r[4];
        const int n = wn * WN + j * 8 + lane % 8 + (lane / 16) * 8;
        ptx::ldmatrix_x4(r, s + Smem::kA + n * kRowBytes + ks * 32 + (lane / 8) % 2 * 16);
        b[j][0] = r[0];
        b[j][1] = r[1];
        b[j + 1][0] = r[2];
        b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) ptx::mma_m16n8k16(acc[i][j], a[i], b[j]);
    }
  }
  ptx::copy_async_wait<0>();
  __syncthreads();  // every warp is done with the stages: the outputs take their memory

  // The accumulators (rows g and g + 8, columns 2t and 2t + 1 of each 16 x 8 tile) in as fp32,
  // then 8 consecutive outputs of a row per thread through the shared epilogue.
  float* Cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(Cs + (wm * WM + i * 16 + g + 8 * h) * Smem::kLdc + wn * WN + j * 8 + 2 * t) =
            make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
  __syncthreads();
  constexpr int C_VECS = BM * BN / 8 / kThreads;
  static_assert(C_VECS * kThreads * 8 == BM * BN, "tile/threads");
#pragma unroll
  for (int c = 0; c < C_VECS; ++c) {
    const int idx = threadIdx.x + c * kThreads, row = idx / (BN / 8), col = (idx % (BN / 8)) * 8;
    const int gm = m0 + row, gn = n0 + col;
    if (gm >= M || gn >= N) continue;
    const float4* cs = reinterpret_cast<const float4*>(Cs + row * Smem::kLdc + col);
    const float4 lo = cs[0], hi = cs[1];
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    store_outputs<kResidual, false>(p, gm, gn, v);
  }
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES>
void launch_tile(const GemmArgs& p, cudaStream_t s) {
  constexpr int kBytes = PipeSmem<BM, BN, STAGES>::kBytes;
  static_assert(kBytes <= 48 * 1024, "past 48 KiB a kernel must opt in");
  const dim3 grid((p.n + BN - 1) / BN, (p.m + BM - 1) / BM);
  constexpr int threads = WARPS_M * WARPS_N * 32;
  if (p.gate && p.residual)
    launch(gemm_pipe_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, true, true>, grid, threads, kBytes, s, p);
  else if (p.gate)
    launch(gemm_pipe_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, true, false>, grid, threads, kBytes, s, p);
  else if (p.residual)
    launch(gemm_pipe_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, false, true>, grid, threads, kBytes, s, p);
  else
    launch(gemm_pipe_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, false, false>, grid, threads, kBytes, s, p);
}

}  // namespace

bool gemm_pipe_supports(const GemmArgs& p, int tile) {
  if (tile < 0 || tile >= kPipeTiles) return false;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.k % 8 || p.n % 8 || p.fp8 || p.out_e4m3 || p.out_f32 || p.im2col.active() ||
      p.out_cols)
    return false;
  const int rows = kTileRows[tile];
  if ((static_cast<int64_t>(p.m) + rows - 1) / rows > 65535) return false;  // the grid's y dimension
  // A tile's rows span at most ceil((rows - 1) / rows_per_image) + 1 images.
  return !p.gate || (p.rows_per_image > 0 && (rows - 2 + p.rows_per_image) / p.rows_per_image + 1 <= kGateImages);
}

void launch_gemm_pipe(const GemmArgs& p, int tile, cudaStream_t s) {
  if (tile == 0)
    launch_tile<128, 32, 4, 1, 3>(p, s);
  else
    launch_tile<64, 64, 2, 2, 4>(p, s);
}

}  // namespace kiln::cuda
