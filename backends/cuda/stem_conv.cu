// The stem: a direct conv that reads the fp32 NCHW network input and writes fp16 NHWC, so the
// layout change and the cast cost no pass of their own. One thread: one pixel, 8 out channels.
#include <algorithm>

#include "backends/cuda/activation.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void stem_kernel(StemArgs p) {
  extern __shared__ float w[];  // [k, k, c_in, c_out]
  const int wsize = p.kernel * p.kernel * p.c_in * p.c_out;
  for (int i = threadIdx.x; i < wsize; i += blockDim.x) w[i] = p.w[i];
  __syncthreads();
  const int groups = p.c_out / 8;
  const int64_t total = static_cast<int64_t>(p.batch) * p.oh * p.ow * groups;
  // Grid-stride: a block loads the weights once and then covers many pixels.
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int g = static_cast<int>(idx % groups);
    const int64_t pix = idx / groups;
    const int ox = static_cast<int>(pix % p.ow), oy = static_cast<int>((pix / p.ow) % p.oh);
    const int n = static_cast<int>(pix / (static_cast<int64_t>(p.ow) * p.oh));
    const int c0 = g * 8;
    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = p.bias ? p.bias[c0 + e] : 0.0f;
    for (int ky = 0; ky < p.kernel; ++ky) {
      const int iy = oy * p.stride - p.pad_top + ky;
      if (iy < 0 || iy >= p.h) continue;
      for (int kx = 0; kx < p.kernel; ++kx) {
        const int ix = ox * p.stride - p.pad_left + kx;
        if (ix < 0 || ix >= p.w_in) continue;
        for (int ci = 0; ci < p.c_in; ++ci) {
          const float v = __ldg(p.x + ((static_cast<int64_t>(n) * p.c_in + ci) * p.h + iy) * p.w_in + ix);
          const float* wp = w + ((ky * p.kernel + kx) * p.c_in + ci) * p.c_out + c0;
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[e] = fmaf(v, wp[e], acc[e]);
        }
      }
    }
    Half8 o;
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o.h2[e] = __floats2half2_rn(activate(acc[2 * e], p.act), activate(acc[2 * e + 1], p.act));
    *reinterpret_cast<uint4*>(p.y + pix * p.c_out + c0) = o.u;
  }
}

}  // namespace

void launch_stem(const StemArgs& p, cudaStream_t s) {
  const int64_t total = static_cast<int64_t>(p.batch) * p.oh * p.ow * (p.c_out / 8);
  const size_t shared = static_cast<size_t>(p.kernel) * p.kernel * p.c_in * p.c_out * sizeof(float);
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, static_cast<int64_t>(sms) * 8);
  stem_kernel<<<static_cast<unsigned>(blocks), kThreads, shared, s>>>(p);
}

}  // namespace kiln::cuda
