// The stem: a direct conv that reads the fp32 NCHW network input and writes fp16 NHWC, so the
// layout change and the cast cost no pass of their own. One thread computes every output
// channel of one pixel, with its whole input window loaded into registers first (the common
// 3x3 RGB case is specialised for each output width so those loads are independent and issued
// together, and each input value is read once for all channels).
#include <algorithm>
#include <utility>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 128;

template <int K, int CIN, int COUT>
__global__ void __launch_bounds__(kThreads) stem_kernel(StemArgs p) {
  wait_for_predecessor();
  __shared__ float w[K * K * CIN * COUT];  // [k, k, c_in, c_out]
  for (int i = threadIdx.x; i < K * K * CIN * COUT; i += blockDim.x) w[i] = p.w[i];
  __syncthreads();
  const int64_t total = static_cast<int64_t>(p.batch) * p.oh * p.ow;
  for (int64_t pix = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; pix < total;
       pix += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ox = static_cast<int>(pix % p.ow), oy = static_cast<int>((pix / p.ow) % p.oh);
    const int n = static_cast<int>(pix / (static_cast<int64_t>(p.ow) * p.oh));
    float in[K * K * CIN];
#pragma unroll
    for (int ky = 0; ky < K; ++ky)
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const int iy = oy * p.stride - p.pad_top + ky, ix = ox * p.stride - p.pad_left + kx;
        const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w_in;
#pragma unroll
        for (int ci = 0; ci < CIN; ++ci)
          in[(ky * K + kx) * CIN + ci] =
              inside ? __ldg(p.x + ((static_cast<int64_t>(n) * CIN + ci) * p.h + iy) * p.w_in + ix) : 0.0f;
      }
    __half* out = p.y + pix * COUT;
#pragma unroll
    for (int c0 = 0; c0 < COUT; c0 += 8) {
      float acc[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = p.bias ? p.bias[c0 + e] : 0.0f;
#pragma unroll
      for (int t = 0; t < K * K * CIN; ++t)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] = fmaf(in[t], w[t * COUT + c0 + e], acc[e]);
      Half8 o;
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o.h2[e] = __floats2half2_rn(activate(acc[2 * e], p.act), activate(acc[2 * e + 1], p.act));
      *reinterpret_cast<uint4*>(out + c0) = o.u;
    }
  }
}

// Any small first conv: one thread per (pixel, 8 output channels).
__global__ void stem_generic_kernel(StemArgs p) {
  wait_for_predecessor();
  extern __shared__ float w[];
  const int wsize = p.kernel * p.kernel * p.c_in * p.c_out;
  for (int i = threadIdx.x; i < wsize; i += blockDim.x) w[i] = p.w[i];
  __syncthreads();
  const int groups = p.c_out / 8;
  const int64_t total = static_cast<int64_t>(p.batch) * p.oh * p.ow * groups;
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

// The output widths of the specialised 3x3 RGB stem, those of common image classifiers' stems
// (16-64). The generic kernel reads every input value once per 8 channels: it ran a 48-channel
// stem at a third of the bandwidth the specialised one reaches.
using StemWidths = std::integer_sequence<int, 16, 24, 32, 40, 48, 56, 64>;

template <int... kCout>
bool launch_rgb3x3(const StemArgs& p, unsigned blocks, cudaStream_t s, std::integer_sequence<int, kCout...>) {
  return ((p.c_out == kCout && (launch(stem_kernel<3, 3, kCout>, blocks, kThreads, 0, s, p), true)) || ...);
}

}  // namespace

void launch_stem(const StemArgs& p, cudaStream_t s) {
  const int sms = multiprocessor_count();
  const int64_t pixels = static_cast<int64_t>(p.batch) * p.oh * p.ow;
  if (p.kernel == 3 && p.c_in == 3) {
    const int64_t blocks = std::min<int64_t>((pixels + kThreads - 1) / kThreads, static_cast<int64_t>(sms) * 16);
    if (launch_rgb3x3(p, static_cast<unsigned>(blocks), s, StemWidths{})) return;
  }
  const int64_t total = pixels * (p.c_out / 8);
  const size_t shared = static_cast<size_t>(p.kernel) * p.kernel * p.c_in * p.c_out * sizeof(float);
  const int64_t blocks = std::min<int64_t>((total + 255) / 256, static_cast<int64_t>(sms) * 8);
  launch(stem_generic_kernel, static_cast<unsigned>(blocks), 256, shared, s, p);
}

}  // namespace kiln::cuda
