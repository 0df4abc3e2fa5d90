// A direct conv2d of any geometry (graph/ops/conv2d.h) with its fused inputs and outputs: the
// general path for convolutions the fast kernels (GEMM, depthwise, stem) do not take.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels.cuh"
#include "kiln/tensor.h"

namespace kiln::cuda {

// A float tensor whose type is known only at run time.
struct FloatRef {
  const void* data = nullptr;  // nullptr: absent
  DType type = DType::F32;     // f32, f16, bf16 or f8e4m3
};

// y[n, oy, ox, oc] for oc in group g = oc / (o / groups), cin = c / groups:
//   v(ch)  = x[n, ch, iy, ix] (NHWC, or NCHW when nchw_input), times gate[n, ch] when there is a
//            gate; with FP8 emulation (input_scale > 0) then replaced by
//            round_to_e4m3(fp16(v) * (1 / input_scale)) * input_scale,
//            or, for an f8e4m3 x (already E4M3 codes), by v * input_scale
//   acc    = bias[oc] + sum over ky, kx, ci of v(g * cin + ci) * w[oc, ky, kx, ci]
//            (iy = oy * stride_h - pad_top + ky * dilation_h, ix likewise; taps outside x skipped)
//   y      = act(acc) + residual[n, oy, ox, oc]
//   mean[n, oc] += y / (oh * ow)   (atomically; the caller zeroes mean before the launch)
//   stored as y_type; an f8e4m3 y stores y / output_scale (nearest even, saturating).
// This is backends/cpu/ops/conv2d.cpp's order of operations, in fp32.
struct ConvDirectArgs {
  const void* x = nullptr;
  DType x_type = DType::F32;    // f32, f16, bf16 or f8e4m3
  bool nchw_input = false;      // x is [n, c, h, w_in], else [n, h, w_in, c]
  const float* w = nullptr;     // [o, kh, kw, c / groups] (OHWI, the graph's layout), weight_scale folded in
  const float* bias = nullptr;  // [o], optional
  FloatRef gate;                // [n, c], optional
  FloatRef residual;            // [n, oh, ow, o], optional
  void* y = nullptr;            // [n, oh, ow, o]
  DType y_type = DType::F32;    // f32, f16, bf16 or f8e4m3
  float* mean = nullptr;        // [n, o], optional
  int n = 0, h = 0, w_in = 0, c = 0, oh = 0, ow = 0, o = 0;
  int kh = 1, kw = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int pad_top = 0, pad_left = 0;  // bottom and right padding only shape oh and ow
  int groups = 1;
  Act act = Act::None;
  float input_scale = 0;   // > 0: FP8 emulation of x
  float output_scale = 0;  // > 0 where y_type is f8e4m3
};
// Whether the kernel takes these x and y types (any float type each).
bool conv_direct_supported(DType x, DType y);
void launch_conv_direct(const ConvDirectArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda
