// conv2d: NHWC convolution with its neighbours fused in, as rewrites and the CUDA and CPU
// backends use it.
//   inputs: x [N, H, W, C] (or [N, C, H, W] with input_layout "nchw"), weight [O, kh, kw, C/groups]
//           (OHWI), bias [O], weight_scale [O] (FP8 weights), gate [N, 1, 1, C] (multiplies x per
//           image and channel: squeeze-excite), residual [N, OH, OW, O] (added after act)
//   output: y [N, OH, OW, O]; with mean_output, also mean [N, 1, 1, O] (f32): y averaged over
//           OH x OW (a global average pool fused into the conv)
// FP8 (input_scale > 0): x is rounded to E4M3 at that scale (x / scale, nearest even,
// saturating) as the fp16 tensor layers exchange; an f8e4m3 x already holds those codes. With
// an f8e4m3 weight each output channel is multiplied by weight_scale. An f8e4m3 output stores
// y / output_scale.
#pragma once

#include <optional>

#include "graph/graph.h"
#include "graph/ops/activation.h"

namespace kiln {

namespace conv2d_input {
enum : int { X = 0, Weight, Bias, WeightScale, Gate, Residual };
}

struct Conv2dParams {
  int kh = 1, kw = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, groups = 1;
  bool same = false;          // TensorFlow "same" padding, resolved per input size
  int pad[4] = {0, 0, 0, 0};  // top, left, bottom, right (explicit padding)
  Activation act = Activation::None;
  bool nchw_input = false;
  float input_scale = 0, output_scale = 0;
  bool mean_output = false;
  bool fp8_input() const { return input_scale > 0; }
};
// kh and kw come from the weight's shape.
Conv2dParams conv2d_params(const Node& node, const Shape& weight_shape);

struct ConvGeometry {
  int n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, o = 0;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};
ConvGeometry conv2d_geometry(const Conv2dParams& p, const Shape& x, const Shape& weight, const Node& node);

// A 1x1, stride-1, unpadded, ungrouped conv: one GEMM over N*H*W rows.
bool is_pointwise(const Conv2dParams& p);
// groups == input channels == output channels, one weight per channel and tap.
bool is_depthwise(const Conv2dParams& p, const Shape& weight_shape);

}  // namespace kiln
