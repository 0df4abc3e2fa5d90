// linear and mlp: the dense layers of classifiers and transformers, with epilogues fused in.
//   linear: x [..., K], weight [N, K], bias [N], residual [..., N] -> act(x W^T + b) + residual
//   mlp:    x [..., K], w1 [H, K], b1 [H], w2 [N, H], b2 [N], residual [..., N]
//           -> act2(act1(x W1^T + b1) W2^T + b2) + residual   (two linears fused: a transformer
//           feed-forward block, or squeeze-excite's reduce and expand layers)
//   norm_linear: linear's inputs, then gamma [K] and beta [K] (both optional) and eps
//           -> linear(layer_norm(x)) and layer_norm(x) (x's dtype): the two as one node
// All take out_dtype (empty: x's dtype).
// An FP8 linear (quantize/: a recipe's layers) has E4M3 weights with a per-output scale
// (weight_scale [N]) and input_scale > 0: x is rounded to fp16, then to E4M3 at that scale, and
// y = act(sum(E4M3 x * E4M3 w) * input_scale * weight_scale + b) + residual (core/fp8.h).
#pragma once

namespace kiln {

namespace linear_input {
enum : int { X = 0, Weight, Bias, Residual, WeightScale, Gamma, Beta };  // Gamma, Beta: norm_linear's
}
namespace mlp_input {
enum : int { X = 0, W1, B1, W2, B2, Residual };
}

}  // namespace kiln
