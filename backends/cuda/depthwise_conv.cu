// Depthwise conv + bias + activation, NHWC fp16, and the squeeze-excite average pool
// accumulated in the same pass (per-image channel sums, reduced in shared memory, then one
// atomicAdd of sum / pixels per channel and block into a zeroed buffer: the mean). A thread owns 8 channels (16-byte
// loads) of a strip of R outputs along a row: each input vector it loads feeds every output of the strip that covers
// it, which cuts loads per output from K*K to about K*(R*S+K-1)/R. An FP8 input is read as 8-byte vectors of E4M3 (or
// rounded to E4M3 from fp16) and its scale applied to the sum.
#include <algorithm>

#include "backends/cuda/fp8.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kMaxGroups = 1024;  // 8192 channels: one thread per group, at most 1024 a block
constexpr int kStrip = 4;         // outputs per thread along x

// 8 input channels at one pixel as floats, as the layer's input mode reads them.
template <DepthwiseInput kMode>
__device__ __forceinline__ void load_input8(const DepthwiseArgs& p, int64_t offset, float (&xf)[8]) {
  if constexpr (kMode == DepthwiseInput::E4M3) {
    const uint2 q = __ldg(reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.x) + offset));
    const uint32_t words[2] = {q.x, q.y};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = from_e4m3x2(static_cast<uint16_t>(words[e / 2] >> (16 * (e % 2))));
      xf[2 * e] = f.x;
      xf[2 * e + 1] = f.y;
    }
  } else {
    Half8 xv;
    xv.u = __ldg(reinterpret_cast<const uint4*>(static_cast<const __half*>(p.x) + offset));
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float2 f = __half22float2(xv.h2[e]);
      if constexpr (kMode == DepthwiseInput::F16ToE4M3)
        f = from_e4m3x2(to_e4m3x2(f.x * p.x_inv_scale, f.y * p.x_inv_scale));
      xf[2 * e] = f.x;
      xf[2 * e + 1] = f.y;
    }
  }
}

template <int K, int S, DepthwiseInput kMode>
__global__ void depthwise_kernel(DepthwiseArgs p, int lanes) {
  wait_for_predecessor();
  extern __shared__ float red[];  // [lanes][c], only when pooling across lanes
  constexpr int kCols = (kStrip - 1) * S + K;
  const int groups = p.c / 8;
  const int g = threadIdx.x % groups, lane = threadIdx.x / groups;
  const int n = blockIdx.y, c0 = g * 8;
  const int strips_per_row = (p.ow + kStrip - 1) / kStrip;
  const int strip = blockIdx.x * lanes + lane;
  float pool[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) pool[e] = 0.0f;
  if (lane < lanes && strip < p.oh * strips_per_row) {
    const int oy = strip / strips_per_row, ox0 = (strip % strips_per_row) * kStrip;
    const int64_t x0 = static_cast<int64_t>(n) * p.h * p.w_in * p.c + c0;
    float acc[kStrip][8];
#pragma unroll
    for (int r = 0; r < kStrip; ++r)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] = p.bias && kMode == DepthwiseInput::F16 ? p.bias[c0 + e] : 0.0f;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const int iy = oy * S - p.pad_top + ky;
      if (iy < 0 || iy >= p.h) continue;
      Half8 wrow[K];
#pragma unroll
      for (int kx = 0; kx < K; ++kx) wrow[kx].u = __ldg(reinterpret_cast<const uint4*>(p.w + (ky * K + kx) * p.c + c0));
      const int ix0 = ox0 * S - p.pad_left;
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const int ix = ix0 + j;
        if (ix < 0 || ix >= p.w_in) continue;
        float xf[8];
        load_input8<kMode>(p, x0 + (static_cast<int64_t>(iy) * p.w_in + ix) * p.c, xf);
#pragma unroll
        for (int r = 0; r < kStrip; ++r) {
          const int kx = j - r * S;
          if (kx < 0 || kx >= K) continue;  // resolved at compile time
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float2 wf = __half22float2(wrow[kx].h2[e]);
            acc[r][2 * e] = fmaf(xf[2 * e], wf.x, acc[r][2 * e]);
            acc[r][2 * e + 1] = fmaf(xf[2 * e + 1], wf.y, acc[r][2 * e + 1]);
          }
        }
      }
    }
    __half* y = p.y + (static_cast<int64_t>(n) * p.oh + oy) * p.ow * p.c + c0;
#pragma unroll
    for (int r = 0; r < kStrip; ++r) {
      if (ox0 + r >= p.ow) break;
      Half8 o;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float a = acc[r][2 * e], b = acc[r][2 * e + 1];
        if constexpr (kMode != DepthwiseInput::F16) {
          a = a * p.x_scale + (p.bias ? p.bias[c0 + 2 * e] : 0.0f);
          b = b * p.x_scale + (p.bias ? p.bias[c0 + 2 * e + 1] : 0.0f);
        }
        a = activate(a, p.act);
        b = activate(b, p.act);
        o.h2[e] = __floats2half2_rn(a, b);
        pool[2 * e] += a;
        pool[2 * e + 1] += b;
      }
      *reinterpret_cast<uint4*>(y + static_cast<int64_t>(ox0 + r) * p.c) = o.u;
    }
  }
  if (!p.pool) return;
  if (lanes == 1) {
#pragma unroll
    for (int e = 0; e < 8; ++e) atomicAdd(p.pool + static_cast<int64_t>(n) * p.c + c0 + e, pool[e] * p.pool_scale);
    return;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) red[lane * p.c + c0 + e] = pool[e];
  __syncthreads();
  for (int c = threadIdx.x; c < p.c; c += blockDim.x) {
    float s = 0.0f;
    for (int l = 0; l < lanes; ++l) s += red[l * p.c + c];
    atomicAdd(p.pool + static_cast<int64_t>(n) * p.c + c, s * p.pool_scale);
  }
}

template <DepthwiseInput kMode>
void launch_mode(const DepthwiseArgs& p, dim3 grid, int threads, size_t shared, cudaStream_t s, int lanes) {
  if (p.kernel == 3 && p.stride == 1)
    launch(depthwise_kernel<3, 1, kMode>, grid, threads, shared, s, p, lanes);
  else if (p.kernel == 3)
    launch(depthwise_kernel<3, 2, kMode>, grid, threads, shared, s, p, lanes);
  else if (p.kernel == 7)  // stride 1 only: large-kernel blocks (RepVGG-style, merged)
    launch(depthwise_kernel<7, 1, kMode>, grid, threads, shared, s, p, lanes);
  else if (p.stride == 1)
    launch(depthwise_kernel<5, 1, kMode>, grid, threads, shared, s, p, lanes);
  else
    launch(depthwise_kernel<5, 2, kMode>, grid, threads, shared, s, p, lanes);
}

}  // namespace

bool depthwise_supported(int kernel, int stride, int channels) {
  return ((kernel == 3 || kernel == 5) && (stride == 1 || stride == 2) || (kernel == 7 && stride == 1)) &&
         channels % 8 == 0 && channels / 8 <= kMaxGroups;
}

void launch_depthwise(const DepthwiseArgs& p, cudaStream_t s) {
  const int groups = p.c / 8;
  const int lanes = std::max(1, 256 / groups);  // strips per block
  const int strips = p.oh * ((p.ow + kStrip - 1) / kStrip);
  dim3 grid((strips + lanes - 1) / lanes, p.batch);
  const int threads = groups * lanes;
  const size_t shared = p.pool && lanes > 1 ? static_cast<size_t>(lanes) * p.c * sizeof(float) : 0;
  if (p.x_mode == DepthwiseInput::E4M3)
    launch_mode<DepthwiseInput::E4M3>(p, grid, threads, shared, s, lanes);
  else if (p.x_mode == DepthwiseInput::F16ToE4M3)
    launch_mode<DepthwiseInput::F16ToE4M3>(p, grid, threads, shared, s, lanes);
  else
    launch_mode<DepthwiseInput::F16>(p, grid, threads, shared, s, lanes);
}

}  // namespace kiln::cuda
