// GEMMs with a short K (at most 128) and no gate or residual, as in the pointwise convs that
// expand a few channels into many: out[m, n] = act(sum_k a[m, k] w[n, k] + bias[n]), fp16.
//
// Why a kernel of its own: such a layer moves 4-6 output bytes per input byte and does almost no
// math per byte, so it should run at memory speed. The tile kernels (gemm.cu, gemm_mma.cu) reload
// B per block and pass every output through shared memory as fp32; profiled at batch 128 (Nsight
// Compute, bench/results/2026-12-05-h200-kernel-traffic/) they kept the L1/shared-memory pipe
// 82% busy at 23% of the DRAM bandwidth. Here each warp holds its columns' slice of B in
// registers for the whole kernel (blocks stay resident and take 16-row tiles of A in turn), reads
// A by cp.async into a warp-private double buffer and ldmatrix, and stages only the finished fp16
// outputs in shared memory, so that rows leave as 16-byte stores. No block-wide barrier.
// Measured on an H100 (bench/results/2026-12-05-h100-stream-gemm/): the planner takes it for an
// image classifier's expand convs, whose group went from 1.10 to 0.81 ms at batch 128.
#include "backends/cuda/gemm_stream.cuh"

#include <algorithm>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/ptx.cuh"

namespace kiln::cuda {

const char* const kStreamTileNames[kStreamTiles] = {"stream_n32", "stream_n64"};

namespace {

constexpr int kWarps = 4;  // per block
constexpr int kRows = 16;  // rows of A per tile: one mma's M

// A staged row of A: KS * 16 halves and 16 bytes more, so that the 8 rows an ldmatrix reads
// (an odd number of 16-byte units apart) fall on distinct banks.
__host__ __device__ constexpr int a_row_bytes(int ks) { return ks * 32 + 16; }

// Per warp, in shared memory: two A tiles and the output tile (kRows rows of NT * 8 halves,
// padded by 8 halves so that the fragment stores of a warp hit distinct banks).
template <int KS, int NT>
struct StreamSmem {
  static constexpr int kABytes = kRows * a_row_bytes(KS);
  static constexpr int kOutStride = NT * 8 + 8;  // halves
  static constexpr int kWarpBytes = 2 * kABytes + kRows * kOutStride * 2;
  static constexpr int kBlockBytes = kWarps * kWarpBytes;
};

// Stages rows m0 .. m0 + 15 of A (all KS * 16 columns, zero past M and K) into buf.
template <int KS>
__device__ __forceinline__ void stage_a(const GemmArgs& p, int m0, unsigned char* buf, int lane) {
  constexpr int kVecs = KS * 2;  // 16-byte vectors per row
#pragma unroll
  for (int i = 0; i < KS; ++i) {
    const int v = lane + i * 32, row = v / kVecs, col = (v % kVecs) * 8;
    const bool in = m0 + row < p.m && col < p.k;
    const __half* src = p.a + (in ? static_cast<int64_t>(m0 + row) * p.k + col : 0);
    ptx::copy_async16(buf + row * a_row_bytes(KS) + col * 2, src, in ? 16 : 0);
  }
  ptx::copy_async_commit();
}

// KS steps of 16 along K; NT tiles of 8 columns per warp (one block's columns: blockIdx.x % chunks).
template <int KS, int NT>
__global__ void __launch_bounds__(kWarps * 32) gemm_stream_kernel(GemmArgs p, int chunks) {
  using Smem = StreamSmem<KS, NT>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  unsigned char* a_buf = smem + warp * Smem::kWarpBytes;
  __half* out_tile = reinterpret_cast<__half*>(a_buf + 2 * Smem::kABytes);
  const int chunk = blockIdx.x % chunks, slot = blockIdx.x / chunks, slots = gridDim.x / chunks;
  const int n0 = chunk * NT * 8;

  // This warp's B fragments (ptx.cuh: b[0] B(2t..2t+1, g), b[1] B(8+2t.., g)) and bias pairs,
  // zero past N and K; weights are constants, read before the wait (launch.cuh).
  uint32_t b[NT][KS][2];
  float2 bias[NT];
  const auto* w = static_cast<const __half*>(p.w);
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + j * 8 + g, nb = n0 + j * 8 + 2 * t;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = ks * 16 + h * 8 + 2 * t;
        b[j][ks][h] =
            n < p.n && k < p.k ? __ldg(reinterpret_cast<const uint32_t*>(w + static_cast<int64_t>(n) * p.k + k)) : 0u;
      }
    bias[j] = p.bias && nb < p.n ? make_float2(__ldg(p.bias + nb), __ldg(p.bias + nb + 1)) : make_float2(0.0f, 0.0f);
  }
  wait_for_predecessor();

  const int tiles = (p.m + kRows - 1) / kRows, stride = slots * kWarps;
  int tile = slot * kWarps + warp;
  if (tile < tiles) stage_a<KS>(p, tile * kRows, a_buf, lane);
  for (int buf = 0; tile < tiles; tile += stride, buf ^= 1) {
    // The next tile's A is in flight while this one is multiplied and stored.
    const int next = tile + stride;
    if (next < tiles) stage_a<KS>(p, next * kRows, a_buf + (buf ^ 1) * Smem::kABytes, lane);
    if (next < tiles)
      ptx::copy_async_wait<1>();
    else
      ptx::copy_async_wait<0>();
    __syncwarp();

    // ldmatrix rows: lanes 0-15 rows 0-15 at k 0-7 of the step, lanes 16-31 the same at k 8-15.
    const unsigned char* a_row = a_buf + buf * Smem::kABytes + (lane % 16) * a_row_bytes(KS) + (lane / 16) * 16;
    float acc[NT][4] = {};
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      uint32_t a[4];
      ptx::ldmatrix_x4(a, a_row + ks * 32);
#pragma unroll
      for (int j = 0; j < NT; ++j) ptx::mma_m16n8k16(acc[j], a, b[j][ks]);
    }

    // Bias and activation in fp32, one rounding to fp16 (as the other GEMM kernels' epilogue),
    // into the output tile; then each row's 16-byte vectors to global memory.
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = activate(acc[j][2 * h] + bias[j].x, p.act);
        const float v1 = activate(acc[j][2 * h + 1] + bias[j].y, p.act);
        *reinterpret_cast<__half2*>(out_tile + (g + 8 * h) * Smem::kOutStride + j * 8 + 2 * t) =
            __floats2half2_rn(v0, v1);
      }
    __syncwarp();
    const int m0 = tile * kRows;
#pragma unroll
    for (int i = 0; i < (kRows * NT + 31) / 32; ++i) {
      const int v = lane + i * 32, row = v / NT, col = (v % NT) * 8;
      if (v < kRows * NT && m0 + row < p.m && n0 + col < p.n)
        *reinterpret_cast<uint4*>(static_cast<__half*>(p.out) + static_cast<int64_t>(m0 + row) * p.n + n0 + col) =
            *reinterpret_cast<const uint4*>(out_tile + row * Smem::kOutStride + col);
    }
    __syncwarp();  // the output tile and this A buffer are refilled next
  }
}

// Blocks for every column chunk that together fill each SM once (the kernel walks the rows).
template <int KS, int NT>
void launch_shape(const GemmArgs& p, cudaStream_t s) {
  constexpr int kBytes = StreamSmem<KS, NT>::kBlockBytes;
  static_assert(kBytes <= 48 * 1024, "past 48 KiB a kernel must opt in");
  static const int per_sm = [] {
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, gemm_stream_kernel<KS, NT>, kWarps * 32, kBytes) !=
        cudaSuccess) {
      (void)cudaGetLastError();  // not this call's error to report: the launch below reports its own
      blocks = 1;
    }
    return blocks > 0 ? blocks : 1;
  }();
  const int sms = multiprocessor_count();
  const int chunks = (p.n + NT * 8 - 1) / (NT * 8);
  const int64_t tiles = (static_cast<int64_t>(p.m) + kRows - 1) / kRows;
  const int64_t slots = std::min<int64_t>((tiles + kWarps - 1) / kWarps,
                                          std::max<int64_t>(1, static_cast<int64_t>(sms) * per_sm / chunks));
  launch(gemm_stream_kernel<KS, NT>, dim3(static_cast<unsigned>(slots * chunks)), kWarps * 32, kBytes, s, p, chunks);
}

// K steps of 16 (K rounded up to 16, 32, 48, 64, 96 or 128: padding costs only zeros).
template <int NT>
void launch_columns(const GemmArgs& p, cudaStream_t s) {
  const int steps = (p.k + 15) / 16;
  if (steps <= 1)
    launch_shape<1, NT>(p, s);
  else if (steps <= 2)
    launch_shape<2, NT>(p, s);
  else if (steps <= 3)
    launch_shape<3, NT>(p, s);
  else if (steps <= 4)
    launch_shape<4, NT>(p, s);
  else if constexpr (NT == 4) {  // B fragments: NT * KS * 2 registers a thread
    if (steps <= 6)
      launch_shape<6, NT>(p, s);
    else
      launch_shape<8, NT>(p, s);
  } else {
    launch_columns<4>(p, s);  // past 64: 32 columns a warp (gemm_stream_supports keeps this tile to 64)
  }
}

constexpr int kMaxK[kStreamTiles] = {128, 64};

}  // namespace

bool gemm_stream_supports(const GemmArgs& p, int tile) {
  return tile >= 0 && tile < kStreamTiles && p.k <= kMaxK[tile] && p.k % 8 == 0 && p.n % 8 == 0 && p.n > 0 && !p.fp8 &&
         !p.out_e4m3 && !p.out_f32 && !p.gate && !p.residual && !p.im2col.active() && p.out_cols == 0 && p.m > 0;
}

void launch_gemm_stream(const GemmArgs& p, int tile, cudaStream_t s) {
  if (tile == 0)
    launch_columns<4>(p, s);
  else
    launch_columns<8>(p, s);
}

}  // namespace kiln::cuda
