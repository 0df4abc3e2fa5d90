// linear and mlp: the dense layers of classifiers and transformers, with epilogues fused in.
//   linear: x [..., K], weight [N, K], bias [N], residual [..., N] -> act(x W^T + b) + residual
//   mlp:    x [..., K], w1 [H, K], b1 [H], w2 [N, H], b2 [N], residual [..., N]
//           -> act2(act1(x W1^T + b1) W2^T + b2) + residual   (two linears fused: a transformer
//           feed-forward block, or squeeze-excite's reduce and expand layers)
// Both take out_dtype (empty: x's dtype).
#pragma once

namespace kiln {

namespace linear_input {
enum : int { X = 0, Weight, Bias, Residual };
}
namespace mlp_input {
enum : int { X = 0, W1, B1, W2, B2, Residual };
}

}  // namespace kiln
