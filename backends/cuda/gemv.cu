// y = act(x W^T + b) (+ residual) for up to 8 rows per block row: a bandwidth-bound walk over
// the weights. A block of four warps computes 8 consecutive outputs (the epilogue's unit, shared
// with the GEMMs) for its 8 rows; its warps split K, each lane multiplying 16-byte vectors of the
// 8 weight rows by the same K slice of each input row (fp32 sums), then warp shuffles and shared
// memory add the pieces. The tiled tensor-core kernels would spend most of a 32- or 64-row tile
// on rows that do not exist and read the weights through far fewer blocks.
#include "backends/cuda/gemm_epilogue.cuh"
#include "backends/cuda/gemv.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kCols = 8;      // outputs per block
constexpr int kRowGroup = 8;  // rows per block

template <int kRows, bool kResidual, bool kOutF32>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemmArgs p) {
  wait_for_predecessor();
  __shared__ float partial[kWarps][kRows][kCols];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n0 = blockIdx.x * kCols, m0 = blockIdx.y * kRowGroup;
  const int rows = min(kRows, p.m - m0), vecs = p.k / 8;
  const auto* w = static_cast<const __half*>(p.w);
  float acc[kRows][kCols] = {};
  for (int c = warp * 32 + lane; c < vecs; c += kWarps * 32) {
    float2 wf[kCols][4];
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      Half8 v;
      v.u = __ldg(reinterpret_cast<const uint4*>(w + static_cast<int64_t>(n0 + j) * p.k) + c);
#pragma unroll
      for (int e = 0; e < 4; ++e) wf[j][e] = __half22float2(v.h2[e]);
    }
#pragma unroll
    for (int m = 0; m < kRows; ++m) {
      if (m >= rows) break;
      Half8 a;
      a.u = __ldg(reinterpret_cast<const uint4*>(p.a + static_cast<int64_t>(m0 + m) * p.k) + c);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 af = __half22float2(a.h2[e]);
#pragma unroll
        for (int j = 0; j < kCols; ++j) acc[m][j] = fmaf(af.x, wf[j][e].x, fmaf(af.y, wf[j][e].y, acc[m][j]));
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kRows; ++m)
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
#pragma unroll
      for (int mask = 16; mask > 0; mask /= 2) acc[m][j] += __shfl_xor_sync(0xffffffffu, acc[m][j], mask);
      if (lane == 0) partial[warp][m][j] = acc[m][j];
    }
  __syncthreads();
  if (threadIdx.x >= rows) return;
  const int m = threadIdx.x;
  float v[kCols];
#pragma unroll
  for (int j = 0; j < kCols; ++j) {
    v[j] = 0.0f;
#pragma unroll
    for (int q = 0; q < kWarps; ++q) v[j] += partial[q][m][j];
  }
  store_outputs<kResidual, kOutF32>(p, m0 + m, n0, v);
}

template <int kRows>
void launch_rows(const GemmArgs& p, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.n / kCols), static_cast<unsigned>((p.m + kRowGroup - 1) / kRowGroup));
  if (p.out_f32)
    launch(gemv_kernel<kRows, false, true>, grid, kWarps * 32, 0, s, p);
  else if (p.residual)
    launch(gemv_kernel<kRows, true, false>, grid, kWarps * 32, 0, s, p);
  else
    launch(gemv_kernel<kRows, false, false>, grid, kWarps * 32, 0, s, p);
}

}  // namespace

bool gemv_supports(const GemmArgs& p) {
  return !p.fp8 && !p.gate && !p.out_e4m3 && p.m >= 1 && p.m <= kGemvMaxRows && p.n % kCols == 0 && p.k % 8 == 0;
}

void launch_gemv(const GemmArgs& p, cudaStream_t s) {
  if (p.m == 1)
    launch_rows<1>(p, s);
  else if (p.m == 2)
    launch_rows<2>(p, s);
  else if (p.m <= 4)
    launch_rows<4>(p, s);
  else
    launch_rows<8>(p, s);
}

}  // namespace kiln::cuda
