#include "checkpoints/convert.h"

#include <cmath>

#include "core/error.h"

namespace kiln {

Tensor permute(const Tensor& w, const std::vector<int>& perm) {
  const size_t rank = w.shape.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (size_t d = 0; valid && d < rank; ++d) {
    valid = perm[d] >= 0 && static_cast<size_t>(perm[d]) < rank && !seen[perm[d]];
    if (valid) seen[perm[d]] = true;
  }
  KILN_CHECK(valid, "[convert] not a permutation of the {} dims of {}", rank, shape_string(w.shape));
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * w.shape[d];
  std::vector<int64_t> shape(rank), step(rank);
  for (size_t d = 0; d < rank; ++d) {
    shape[d] = w.shape[perm[d]];
    step[d] = in_stride[perm[d]];
  }
  Tensor out(shape);
  // Walk the output in order, moving the source offset like an odometer.
  std::vector<int64_t> index(rank, 0);
  int64_t from = 0;
  for (int64_t n = 0; n < out.numel(); ++n) {
    out.data[n] = w.data[from];
    for (size_t d = rank; d-- > 0;) {
      from += step[d];
      if (++index[d] < shape[d]) break;
      from -= step[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

Tensor oihw_to_ohwi(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 4, "[convert] conv weight {} is not OIHW", shape_string(w.shape));
  return permute(w, {0, 2, 3, 1});
}

Tensor hwio_to_ohwi(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 4, "[convert] conv weight {} is not HWIO", shape_string(w.shape));
  return permute(w, {3, 0, 1, 2});
}

Tensor depthwise_hwc1_to_ohwi(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 4 && w.dim(3) == 1, "[convert] depthwise weight {} is not [kh, kw, C, 1]",
             shape_string(w.shape));
  return permute(w, {2, 0, 1, 3});
}

Tensor transpose_2d(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 2, "[convert] {} is not a matrix", shape_string(w.shape));
  return permute(w, {1, 0});
}

Tensor fold_batch_norm(Tensor& weight, const Tensor& gamma, const Tensor& beta, const Tensor& mean, const Tensor& var,
                       double eps) {
  const int64_t out = weight.dim(0);
  for (const Tensor* t : {&gamma, &beta, &mean, &var})
    KILN_CHECK(t->shape == std::vector<int64_t>{out}, "[convert] batch norm tensor {} does not fit {} channels",
               shape_string(t->shape), out);
  Tensor bias({out});
  const int64_t per_out = weight.numel() / out;
  for (int64_t o = 0; o < out; ++o) {
    const double scale = gamma.data[o] / std::sqrt(static_cast<double>(var.data[o]) + eps);
    for (int64_t k = 0; k < per_out; ++k)
      weight.data[o * per_out + k] = static_cast<float>(weight.data[o * per_out + k] * scale);
    bias.data[o] = static_cast<float>(beta.data[o] - mean.data[o] * scale);
  }
  return bias;
}

}  // namespace kiln
