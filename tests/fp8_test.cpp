// E4M3 rounding against values worked out by hand, against its definition by spacing, and an
// exhaustive round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/fp8_input.h"
#include "core/fp8.h"

namespace kiln {
namespace {

TEST(E4M3, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(round_to_e4m3(0.0f), 0.0f);
  EXPECT_EQ(round_to_e4m3(1.0f), 1.0f);
  EXPECT_EQ(round_to_e4m3(1.0625f), 1.0f);   // halfway 1 / 1.125: to even (1.000)
  EXPECT_EQ(round_to_e4m3(1.1875f), 1.25f);  // halfway 1.125 / 1.25: to even (1.010)
  EXPECT_EQ(round_to_e4m3(1.07f), 1.125f);
  EXPECT_EQ(round_to_e4m3(-3.3f), -3.25f);
  EXPECT_EQ(round_to_e4m3(448.0f), 448.0f);
  EXPECT_EQ(round_to_e4m3(500.0f), 448.0f);  // saturates, E4M3 has no infinity
  EXPECT_EQ(round_to_e4m3(-1e9f), -448.0f);
  EXPECT_EQ(round_to_e4m3(240.0f), 240.0f);
  EXPECT_EQ(round_to_e4m3(232.0f), 224.0f);              // halfway 224 / 240: to even (224 = 1.110b x 2^7)
  EXPECT_EQ(round_to_e4m3(0.015625f), 0.015625f);        // smallest normal, 2^-6
  EXPECT_EQ(round_to_e4m3(0.001953125f), 0.001953125f);  // smallest subnormal, 2^-9
  EXPECT_EQ(round_to_e4m3(0.0009765625f), 0.0f);         // half of it: to even (zero)
  EXPECT_EQ(round_to_e4m3(0.00146484375f), 0.001953125f);
  EXPECT_TRUE(std::isnan(round_to_e4m3(NAN)));
}

// The definition: the nearest multiple of the spacing of E4M3 values around |x| (2^(e-3) for
// |x| in [2^e, 2^(e+1)), 2^-9 below 2^-6), ties to even, saturated.
float round_by_spacing(float x) {
  if (std::isnan(x)) return x;
  const float a = std::fabs(x);
  if (a >= kE4M3Max) return std::copysign(kE4M3Max, x);
  int exp;
  std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1)
  const int e = exp - 1 < -6 ? -6 : exp - 1;
  const float step = std::ldexp(1.0f, e - 3);
  const float q = std::nearbyint(a / step) * step;
  return std::copysign(q > kE4M3Max ? kE4M3Max : q, x);
}

TEST(E4M3, MatchesTheRoundingBySpacing) {
  auto check = [](float x) {
    const float want = round_by_spacing(x), got = round_to_e4m3(x);
    if (std::isnan(want)) return std::isnan(got);
    return std::memcmp(&want, &got, 4) == 0;  // -0 stays -0
  };
  // Every float from 2^-12 up to past 448 (every bit pattern), both signs, then a sample of all.
  int failures = 0;
  for (uint32_t bits = 0x39800000u; bits <= 0x43f00000u && failures < 5; ++bits)
    for (uint32_t sign : {0u, 0x80000000u}) {
      float x;
      const uint32_t b = bits | sign;
      std::memcpy(&x, &b, 4);
      if (!check(x)) {
        ADD_FAILURE() << x;
        ++failures;
      }
    }
  for (uint64_t bits = 0; bits <= 0xffffffffu && failures < 5; bits += 4099) {
    float x;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&x, &b, 4);
    if (!check(x)) {
      ADD_FAILURE() << x;
      ++failures;
    }
  }
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, 3.4e38f, 1e-45f, 0.0146484375f, 0.015624f})
    EXPECT_TRUE(check(x)) << x;
}

// The CPU's vectorised rounding of FP8 layer inputs is bit for bit the scalar definition.
TEST(E4M3, VectorisedLayerInputsMatchTheScalarRounding) {
  std::vector<float> x;
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {  // every magnitude from 2^-30 to 2^20, both signs
    state = state * 1664525u + 1013904223u;
    const uint32_t bits = (state & 0x80000000u) | ((97u + (state >> 8) % 50u) << 23) | (state & 0x7fffffu);
    float v;
    std::memcpy(&v, &bits, 4);
    x.push_back(v);
  }
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65520.0f, 6e-8f, 3e-8f, 448.0f, 1e30f})
    x.push_back(v);
  for (float scale : {0.001f, 0.37f, 1.0f, 3.5f, 200.0f}) {
    std::vector<float> got = x;
    cpu::round_fp8_inputs(got.data(), static_cast<int64_t>(got.size()), scale, false);
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = fp8_layer_input(x[i], scale, false);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << x[i];
      } else {
        ASSERT_EQ(std::memcmp(&want, &got[i], 4), 0)
            << x[i] << " at scale " << scale << ": " << got[i] << " vs " << want;
      }
    }
  }
}

TEST(E4M3, EveryCodeRoundTrips) {
  int finite = 0;
  for (int b = 0; b < 256; ++b) {
    float v = decode_e4m3(static_cast<uint8_t>(b));
    if (std::isnan(v)) continue;
    ++finite;
    EXPECT_EQ(round_to_e4m3(v), v) << b;
    if (v != 0.0f || b == 0) {
      EXPECT_EQ(encode_e4m3(v), b) << b;
    }
  }
  EXPECT_EQ(finite, 254);  // 0x7f and 0xff are NaN
  EXPECT_EQ(decode_e4m3(0x7e), 448.0f);
}

}  // namespace
}  // namespace kiln
