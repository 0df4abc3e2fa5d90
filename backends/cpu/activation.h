// Activations for the CPU backend. expf is written out (Cephes' polynomial, within 2 ulp)
// because glibc's scalar expf does not vectorise and dominated the run time of whole layers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "graph/ops/activation.h"

namespace kiln::cpu {

inline float exp_approx(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  // n = round(x / ln2) by the 1.5 * 2^23 trick, which vectorises without SSE4.1.
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

inline float apply_activation(float v, Activation act) {
  switch (act) {
    case Activation::None:
      return v;
    case Activation::ReLU:
      return v > 0.0f ? v : 0.0f;
    case Activation::SiLU:
      return v / (1.0f + exp_approx(-v));
    case Activation::Sigmoid:
      return 1.0f / (1.0f + exp_approx(-v));
    case Activation::Tanh:
      return std::tanh(v);
    case Activation::Gelu:
      return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    case Activation::GeluTanh:
      return 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  }
  return v;
}

// y[i] = act(y[i] + bias[i % channels]) over rows of `channels` elements (bias may be null),
// rows over the threads.
void bias_activation(float* y, int64_t rows, int channels, const float* bias, Activation act);
// The same for one row, on the calling thread (for kernels that finish a row while it is in cache).
void bias_activation_row(float* row, int channels, const float* bias, Activation act);

}  // namespace kiln::cpu
