// E4M3 rounding against values worked out by hand and an exhaustive round trip.
#include <gtest/gtest.h>

#include <cmath>

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
