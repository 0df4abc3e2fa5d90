// Weight layout conversions and batch-norm folding against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "checkpoints/convert.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

// A tensor of `shape` holding 0, 1, 2, ... in row-major order.
Tensor iota(std::vector<int64_t> shape) {
  Tensor t(std::move(shape));
  std::iota(t.data.begin(), t.data.end(), 0.0f);
  return t;
}

TEST(Convert, PermuteMovesEveryElement) {
  // [2, 3, 4] -> [4, 2, 3]: out[c][a][b] = in[a][b][c] = 12a + 4b + c.
  const Tensor out = permute(iota({2, 3, 4}), {2, 0, 1});
  ASSERT_EQ(out.shape, (std::vector<int64_t>{4, 2, 3}));
  for (int c = 0; c < 4; ++c)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b) EXPECT_EQ(out.data[(c * 2 + a) * 3 + b], 12 * a + 4 * b + c);
  EXPECT_EQ(transpose_2d(iota({2, 3})).data, (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Convert, ConvWeightLayouts) {
  // OIHW [2, 3, 1, 2] -> OHWI: out[o][0][x][i] = in[o][i][0][x] = 6o + 2i + x.
  const Tensor ohwi = oihw_to_ohwi(iota({2, 3, 1, 2}));
  ASSERT_EQ(ohwi.shape, (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(ohwi.data, (std::vector<float>{0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}));
  // HWIO [1, 2, 2, 3] -> OHWI: out[o][0][x][i] = in[0][x][i][o] = 6x + 3i + o.
  const Tensor from_tf = hwio_to_ohwi(iota({1, 2, 2, 3}));
  ASSERT_EQ(from_tf.shape, (std::vector<int64_t>{3, 1, 2, 2}));
  EXPECT_EQ(from_tf.data, (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  // Depthwise [kh=1, kw=2, C=3, 1] -> [C, 1, 2, 1]: out[c][0][x] = in[0][x][c] = 3x + c.
  const Tensor dw = depthwise_hwc1_to_ohwi(iota({1, 2, 3, 1}));
  ASSERT_EQ(dw.shape, (std::vector<int64_t>{3, 1, 2, 1}));
  EXPECT_EQ(dw.data, (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Convert, RejectsWrongRanksAndPermutations) {
  EXPECT_NE(test::error_message([] { oihw_to_ohwi(iota({2, 3})); }).find("is not OIHW"), std::string::npos);
  EXPECT_NE(test::error_message([] {
              depthwise_hwc1_to_ohwi(iota({1, 2, 3, 2}));
            }).find("is not [kh, kw, C, 1]"),
            std::string::npos);
  EXPECT_NE(test::error_message([] { permute(iota({2, 3}), {0, 0}); }).find("not a permutation"), std::string::npos);
  EXPECT_NE(test::error_message([] { permute(iota({2, 3}), {0, 2}); }).find("not a permutation"), std::string::npos);
  EXPECT_NE(test::error_message([] { permute(iota({2, 3}), {0}); }).find("not a permutation"), std::string::npos);
}

TEST(Convert, FoldsBatchNormIntoTheLayerBefore) {
  // Two output channels of two weights each; scale = gamma / sqrt(var + eps).
  Tensor weight = iota({2, 2});  // [[0, 1], [2, 3]]
  Tensor gamma({2}), beta({2}), mean({2}), var({2});
  gamma.data = {2.0f, 0.5f};
  beta.data = {1.0f, -1.0f};
  mean.data = {0.5f, 4.0f};
  var.data = {3.0f, 0.0f};
  const Tensor bias = fold_batch_norm(weight, gamma, beta, mean, var, 1.0);
  // Channel 0: scale 2 / 2 = 1; channel 1: scale 0.5 / 1 = 0.5.
  EXPECT_EQ(weight.data, (std::vector<float>{0, 1, 1, 1.5f}));
  EXPECT_EQ(bias.data, (std::vector<float>{0.5f, -3.0f}));
  Tensor short_gamma({1});
  EXPECT_NE(test::error_message([&] {
              fold_batch_norm(weight, short_gamma, beta, mean, var, 1.0);
            }).find("does not fit 2 channels"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
