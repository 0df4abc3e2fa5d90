// Depthwise conv + bias + activation, NHWC fp16, 8 channels per thread with 16-byte loads, and
// the squeeze-excite average pool accumulated in the same pass (per-image channel sums, reduced
// in shared memory, then one atomicAdd per channel and block).
#include <algorithm>

#include "backends/cuda/activation.cuh"

namespace kiln::cuda {

namespace {

constexpr int kMaxThreads = 256;

template <int K, int S>
__global__ void depthwise_kernel(DepthwiseArgs p, int lanes, int pix_per_block) {
  extern __shared__ float red[];  // [lanes][c], only when pooling
  const int groups = p.c / 8;
  const int g = threadIdx.x % groups, lane = threadIdx.x / groups;
  const int n = blockIdx.y, c0 = g * 8;
  const int npix = p.oh * p.ow;
  const int pix_begin = blockIdx.x * pix_per_block, pix_end = min(pix_begin + pix_per_block, npix);
  float bias[8], pool[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    bias[e] = p.bias ? p.bias[c0 + e] : 0.0f;
    pool[e] = 0.0f;
  }
  const __half* x = p.x + static_cast<int64_t>(n) * p.h * p.w_in * p.c;
  __half* y = p.y + static_cast<int64_t>(n) * npix * p.c;
  if (lane < lanes) {
    for (int pix = pix_begin + lane; pix < pix_end; pix += lanes) {
      const int oy = pix / p.ow, ox = pix % p.ow;
      float acc[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = bias[e];
#pragma unroll
      for (int ky = 0; ky < K; ++ky) {
        const int iy = oy * S - p.pad_top + ky;
        if (iy < 0 || iy >= p.h) continue;
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
          const int ix = ox * S - p.pad_left + kx;
          if (ix < 0 || ix >= p.w_in) continue;
          Half8 xv, wv;
          xv.u = __ldg(reinterpret_cast<const uint4*>(x + (static_cast<int64_t>(iy) * p.w_in + ix) * p.c + c0));
          wv.u = __ldg(reinterpret_cast<const uint4*>(p.w + (ky * K + kx) * p.c + c0));
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float2 xf = __half22float2(xv.h2[e]), wf = __half22float2(wv.h2[e]);
            acc[2 * e] = fmaf(xf.x, wf.x, acc[2 * e]);
            acc[2 * e + 1] = fmaf(xf.y, wf.y, acc[2 * e + 1]);
          }
        }
      }
      Half8 o;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float a = activate(acc[2 * e], p.act), b = activate(acc[2 * e + 1], p.act);
        o.h2[e] = __floats2half2_rn(a, b);
        pool[2 * e] += a;
        pool[2 * e + 1] += b;
      }
      *reinterpret_cast<uint4*>(y + static_cast<int64_t>(pix) * p.c + c0) = o.u;
    }
  }
  if (!p.pool) return;
  if (lanes == 1) {
#pragma unroll
    for (int e = 0; e < 8; ++e) atomicAdd(p.pool + static_cast<int64_t>(n) * p.c + c0 + e, pool[e]);
    return;
  }
  if (lane < lanes)
#pragma unroll
    for (int e = 0; e < 8; ++e) red[lane * p.c + c0 + e] = pool[e];
  __syncthreads();
  for (int c = threadIdx.x; c < p.c; c += blockDim.x) {
    float s = 0.0f;
    for (int l = 0; l < lanes; ++l) s += red[l * p.c + c];
    atomicAdd(p.pool + static_cast<int64_t>(n) * p.c + c, s);
  }
}

}  // namespace

bool depthwise_supported(int kernel, int stride, int channels) {
  return (kernel == 3 || kernel == 5) && (stride == 1 || stride == 2) && channels % 8 == 0 &&
         channels / 8 <= kMaxThreads;
}

void launch_depthwise(const DepthwiseArgs& p, cudaStream_t s) {
  const int groups = p.c / 8;
  const int lanes = std::max(1, kMaxThreads / groups);
  const int npix = p.oh * p.ow;
  // Each thread walks up to 4 pixels; small maps get fewer, so that batch 1 still spreads out.
  const int pix_per_block = std::min(npix, lanes * 4);
  dim3 grid((npix + pix_per_block - 1) / pix_per_block, p.batch);
  const int threads = groups * lanes;
  const size_t shared = p.pool && lanes > 1 ? static_cast<size_t>(lanes) * p.c * sizeof(float) : 0;
  if (p.kernel == 3 && p.stride == 1)
    depthwise_kernel<3, 1><<<grid, threads, shared, s>>>(p, lanes, pix_per_block);
  else if (p.kernel == 3)
    depthwise_kernel<3, 2><<<grid, threads, shared, s>>>(p, lanes, pix_per_block);
  else if (p.stride == 1)
    depthwise_kernel<5, 1><<<grid, threads, shared, s>>>(p, lanes, pix_per_block);
  else
    depthwise_kernel<5, 2><<<grid, threads, shared, s>>>(p, lanes, pix_per_block);
}

}  // namespace kiln::cuda
