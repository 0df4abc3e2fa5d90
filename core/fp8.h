// FP8 E4M3 (the OCP "E4M3FN" format NVIDIA GPUs use): 1 sign, 4 exponent (bias 7), 3 mantissa
// bits; no infinities, largest finite 448, subnormals down to 2^-9. Quantisation rounds to the
// nearest representable value, ties to even, and saturates (as cuBLASLt's FP8 conversions with
// saturation do). The CPU backend emulates FP8 layers with these functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/half.h"

namespace kiln {

inline constexpr float kE4M3Max = 448.0f;

// The nearest E4M3 value to x (ties to even), saturated to +-448; NaN stays NaN. Normals round
// their float mantissa to 3 bits in the integer bits (a carry moves into the exponent, as it
// should); below 2^-6 the values are multiples of 2^-9, rounded by adding and subtracting 1.5 *
// 2^23 (the FPU's ties-to-even). No branches on the value: the CPU emulation rounds every input
// element of every FP8 layer. tests/fp8_test.cpp checks it against the rounding by spacing.
inline float round_to_e4m3(float x) {
  const float a = std::fabs(x);
  uint32_t bits;
  std::memcpy(&bits, &a, 4);
  bits = (bits + 0x7ffffu + ((bits >> 20) & 1u)) & ~0xfffffu;
  float normal;
  std::memcpy(&normal, &bits, 4);
  const float subnormal = ((a * 512.0f + 12582912.0f) - 12582912.0f) * (1.0f / 512.0f);
  float q = a < 0.015625f ? subnormal : normal;
  q = q > kE4M3Max ? kE4M3Max : q;  // also an infinity the carry made
  return x != x ? x : std::copysign(q, x);
}

// Encodes an already representable value (round_to_e4m3's output) as the E4M3 byte.
inline uint8_t encode_e4m3(float v) {
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  float a = std::fabs(v);
  if (std::isnan(v)) return 0x7f;
  if (a == 0.0f) return sign;
  int exp;
  std::frexp(a, &exp);
  int e = exp - 1;
  if (e < -6) return sign | static_cast<uint8_t>(std::lround(a / std::ldexp(1.0f, -9)));  // subnormal
  int mant = static_cast<int>(std::lround((a / std::ldexp(1.0f, e) - 1.0f) * 8));
  return sign | static_cast<uint8_t>(((e + 7) << 3) | mant);
}

inline float decode_e4m3(uint8_t b) {
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  const int e = (b >> 3) & 0xf, m = b & 7;
  if (e == 0xf && m == 7) return NAN;
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -9);
  return sign * std::ldexp(1.0f + m / 8.0f, e - 7);
}

// An FP8 layer's weights as values: the stored E4M3 values w [out, ...] times their output
// channel's scale (scale [out]), in place.
inline void apply_channel_scales(std::span<float> w, const std::vector<float>& scale) {
  const size_t per_out = w.size() / scale.size();
  for (size_t i = 0; i < w.size(); ++i) w[i] *= scale[i / per_out];
}

// An FP8 layer's input as the CPU emulates it (graph/ops/conv2d.h): the fp16 value that layers
// exchange, rounded to E4M3 at `scale` and scaled back; an E4M3 input (`is_e4m3`) holds the
// code's value already, which the scale turns into the activation.
inline float fp8_layer_input(float x, float scale, bool is_e4m3) {
  return is_e4m3 ? x * scale : round_to_e4m3(half_to_float(float_to_half(x)) * (1.0f / scale)) * scale;
}

}  // namespace kiln
