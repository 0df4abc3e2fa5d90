#include "checkpoints/convert.h"

#include <cmath>

#include "core/error.h"

namespace kiln {

Tensor oihw_to_ohwi(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 4, "[convert] conv weight {} is not OIHW", shape_string(w.shape));
  const int64_t o = w.dim(0), i = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  Tensor out({o, kh, kw, i});
  for (int64_t a = 0; a < o; ++a)
    for (int64_t b = 0; b < i; ++b)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          out.data[((a * kh + y) * kw + x) * i + b] = w.data[((a * i + b) * kh + y) * kw + x];
  return out;
}

Tensor hwio_to_ohwi(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 4, "[convert] conv weight {} is not HWIO", shape_string(w.shape));
  const int64_t kh = w.dim(0), kw = w.dim(1), i = w.dim(2), o = w.dim(3);
  Tensor out({o, kh, kw, i});
  for (int64_t y = 0; y < kh; ++y)
    for (int64_t x = 0; x < kw; ++x)
      for (int64_t c = 0; c < i; ++c)
        for (int64_t k = 0; k < o; ++k)
          out.data[((k * kh + y) * kw + x) * i + c] = w.data[((y * kw + x) * i + c) * o + k];
  return out;
}

Tensor depthwise_hwc1_to_ohwi(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 4 && w.dim(3) == 1, "[convert] depthwise weight {} is not [kh, kw, C, 1]",
             shape_string(w.shape));
  const int64_t kh = w.dim(0), kw = w.dim(1), c = w.dim(2);
  Tensor out({c, kh, kw, 1});
  for (int64_t y = 0; y < kh; ++y)
    for (int64_t x = 0; x < kw; ++x)
      for (int64_t k = 0; k < c; ++k) out.data[(k * kh + y) * kw + x] = w.data[(y * kw + x) * c + k];
  return out;
}

Tensor transpose_2d(const Tensor& w) {
  KILN_CHECK(w.shape.size() == 2, "[convert] {} is not a matrix", shape_string(w.shape));
  const int64_t a = w.dim(0), b = w.dim(1);
  Tensor out({b, a});
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) out.data[j * a + i] = w.data[i * b + j];
  return out;
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
