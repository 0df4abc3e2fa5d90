// Weight conversions families apply once, when a bundle is built (never at run time): layout
// changes into kiln's OHWI convolution weights, and batch norm folded into the layer before it.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace kiln {

// out.shape[d] = w.shape[perm[d]], elements moved to match.
Tensor permute(const Tensor& w, const std::vector<int>& perm);
Tensor oihw_to_ohwi(const Tensor& w);            // PyTorch conv weights
Tensor hwio_to_ohwi(const Tensor& w);            // TensorFlow conv weights
Tensor depthwise_hwc1_to_ohwi(const Tensor& w);  // TensorFlow depthwise [kh, kw, C, 1] -> [C, kh, kw, 1]
Tensor transpose_2d(const Tensor& w);            // [a, b] -> [b, a]

// y = gamma * (x - mean) / sqrt(var + eps) + beta after a layer whose weight has the output
// channel as its first dim: scales each output channel of `weight` and returns the bias
// (beta - mean * scale), in double so that the fp32 results are correctly rounded products.
Tensor fold_batch_norm(Tensor& weight, const Tensor& gamma, const Tensor& beta, const Tensor& mean, const Tensor& var,
                       double eps);

}  // namespace kiln
