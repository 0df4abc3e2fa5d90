// Generic direct conv2d (backends/cuda/conv_direct.cuh): each thread computes one output
// element (n, oy, ox, oc) at a time (grid-stride), oc fastest, so that a warp's threads share
// their input reads (one group); each thread walks its own OHWI weight row.
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/conv_direct.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/strided.cuh"

namespace kiln::cuda {

namespace {

// inv_input_scale is 1 / input_scale as the host computes it (the CPU reference multiplies by
// that float rather than dividing).
template <typename TX>
__global__ void conv_direct_kernel(ConvDirectArgs p, float inv_input_scale) {
  wait_for_predecessor();
  constexpr bool kE4M3Input = std::is_same_v<TX, __nv_fp8_e4m3>;
  const TX* x = static_cast<const TX*>(p.x);
  const int cin = p.c / p.groups, cout = p.o / p.groups;
  const bool fp8 = p.input_scale > 0;
  const int64_t total = static_cast<int64_t>(p.n) * p.oh * p.ow * p.o;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int oc = static_cast<int>(i % p.o);
    const int64_t pixel = i / p.o;
    const int ox = static_cast<int>(pixel % p.ow), oy = static_cast<int>(pixel / p.ow % p.oh);
    const int64_t n = pixel / (static_cast<int64_t>(p.ow) * p.oh);
    const int c0 = oc / cout * cin;  // the group's first input channel
    float acc = p.bias ? p.bias[oc] : 0.0f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
      if (iy < 0 || iy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int ix = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
        if (ix < 0 || ix >= p.w_in) continue;
        // Channel ch of this tap at x_at + ch * x_step.
        const int64_t x_at = p.nchw_input ? (n * p.c * p.h + iy) * p.w_in + ix : ((n * p.h + iy) * p.w_in + ix) * p.c;
        const int64_t x_step = p.nchw_input ? static_cast<int64_t>(p.h) * p.w_in : 1;
        const float* w = p.w + ((static_cast<int64_t>(oc) * p.kh + ky) * p.kw + kx) * cin;
        for (int ci = 0; ci < cin; ++ci) {
          const int ch = c0 + ci;
          float v = to_float(x[x_at + ch * x_step]);
          if (p.gate.data) v *= load_float(p.gate.data, p.gate.type, n * p.c + ch);
          if (fp8) {
            if constexpr (kE4M3Input)
              v *= p.input_scale;
            else
              v = to_float(from_float<__nv_fp8_e4m3>(__half2float(__float2half_rn(v)) * inv_input_scale)) *
                  p.input_scale;
          }
          acc += v * w[ci];
        }
      }
    }
    float y = activate(acc, p.act);
    if (p.residual.data) y += load_float(p.residual.data, p.residual.type, i);
    if (p.mean) atomicAdd(p.mean + n * p.o + oc, y / static_cast<float>(static_cast<int64_t>(p.oh) * p.ow));
    if (p.y_type == DType::F8E4M3) y /= p.output_scale;
    store_float(p.y, p.y_type, i, y);
  }
}

}  // namespace

bool conv_direct_supported(DType x, DType y) {
  auto is_float = [](DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3; };
  return is_float(x) && is_float(y);
}

void launch_conv_direct(const ConvDirectArgs& p, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(p.n) * p.oh * p.ow * p.o;
  if (total <= 0) return;
  const float inv_input_scale = p.input_scale > 0 ? 1.0f / p.input_scale : 0.0f;
  dispatch_float(p.x_type, "conv2d", [&](auto tag) {
    using TX = typename decltype(tag)::type;
    launch(conv_direct_kernel<TX>, grid_blocks(total), kBlockThreads, 0, stream, p, inv_input_scale);
  });
}

}  // namespace kiln::cuda
