// The CPU reference kernels of the transformer ops (matmul, gather, layer_norm, rms_norm,
// softmax, attention, dynamic_update_slice) on tiny graphs whose outputs are worked out by
// hand here. The op harness checks other backends against these kernels; this checks the
// kernels themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "core/dtype.h"
#include "tests/test_support.h"

namespace kiln {

namespace {

const float kInf = INFINITY;
const float kLn2 = std::log(2.0f), kLn3 = std::log(3.0f);

ConstantLookup lookup(std::map<std::string, HostTensor> constants = {}) {
  return [constants = std::move(constants)](const std::string& name) {
    const HostTensor& t = constants.at(name);
    return ConstantView{t.dtype, t.shape, t.data};
  };
}

HostTensor f32(const std::string& name, const Shape& shape, const std::vector<float>& values) {
  return HostTensor::from_f32(name, shape, values);
}

HostTensor i64(const std::string& name, const Shape& shape, const std::vector<int64_t>& values) {
  return HostTensor::from_i64(name, shape, values);
}

HostTensor typed(const std::string& name, DType dtype, const Shape& shape, const std::vector<float>& values) {
  HostTensor t = HostTensor::zeros(name, dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  convert_from_f32(dtype, values.data(), t.data.data(), t.numel());
  return t;
}

// The graph's first output as floats, run once on the CPU.
std::vector<float> run_cpu(const Graph& g, const std::vector<HostTensor>& inputs,
                           std::map<std::string, HostTensor> constants = {}) {
  Engine e(g, lookup(std::move(constants)), EngineOptions{"cpu"});
  return e.run(inputs).at(0).to_f32();
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tolerance = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "at " << i;
}

}  // namespace

// --- softmax

TEST(TransformerOps, SoftmaxOfZeroAndLn2IsOneThirdTwoThirds) {
  Graph g;
  const int x = g.add_input("x", DType::F32, fixed_shape({1, 2}));
  g.add_output("y", g.add("softmax", "sm", {x}));
  expect_near(run_cpu(g, {f32("x", {1, 2}, {0, kLn2})}), {1.0f / 3, 2.0f / 3});
}

TEST(TransformerOps, SoftmaxInF16) {
  Graph g;
  const int x = g.add_input("x", DType::F16, fixed_shape({3}));
  g.add_output("y", g.add("softmax", "sm", {x}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  const auto out = e.run({typed("x", DType::F16, {3}, {0, kLn2, kLn2})});
  EXPECT_EQ(out[0].dtype, DType::F16);
  expect_near(out[0].to_f32(), {0.2f, 0.4f, 0.4f}, 1e-3);
}

TEST(TransformerOps, SoftmaxAddsTheMaskAndGivesZerosForAFullyMaskedRow) {
  Graph g;
  const int x = g.add_input("x", DType::F32, fixed_shape({3, 3}));
  const int mask = g.add_input("mask", DType::F32, fixed_shape({3, 3}));
  g.add_output("y", g.add("softmax", "sm", {x, mask}));
  const auto y = run_cpu(g, {f32("x", {3, 3}, {1, 2, 3, 5, 5, 5, 0, 0, 0}),
                             f32("mask", {3, 3}, {0, -kInf, 0, -kInf, -kInf, -kInf, 0, kLn3, -kInf})});
  const float e1 = std::exp(1.0f), e3 = std::exp(3.0f);
  expect_near(y, {e1 / (e1 + e3), 0, e3 / (e1 + e3), 0, 0, 0, 0.25f, 0.75f, 0});
  for (float v : y) EXPECT_FALSE(std::isnan(v));
}

TEST(TransformerOps, SoftmaxMaskBroadcastsAndTheAxisCanBeAnyDim) {
  Graph g;
  const int x = g.add_input("x", DType::F32, fixed_shape({2, 2}));
  const int mask = g.add_input("mask", DType::F32, fixed_shape({2, 1}));
  g.add_output("y", g.add("softmax", "sm", {x, mask}, {{"axis", int64_t{0}}}));
  // Columns: [0 + 0, ln3 + 0] -> [1/4, 3/4]; [0, 0] -> [1/2, 1/2].
  expect_near(run_cpu(g, {f32("x", {2, 2}, {0, 0, kLn3, 0}), f32("mask", {2, 1}, {0, 0})}), {0.25f, 0.5f, 0.75f, 0.5f});
  // A mask that does not broadcast to x is refused.
  const int bad = g.add_input("bad", DType::F32, fixed_shape({3}));
  g.add_output("y2", g.add("softmax", "sm2", {x, bad}));
  EXPECT_NE(test::error_message([&] { g.validate(); }).find("[softmax] sm2:"), std::string::npos);
}

// --- layer_norm and rms_norm

TEST(TransformerOps, LayerNormOfOneTwoThree) {
  Graph g;
  const int x = g.add_input("x", DType::F32, fixed_shape({2, 3}));
  g.add_output("y", g.add("layer_norm", "ln", {x}));
  // Row 1: mean 2, biased variance 2/3. Row 2: constant, so all zeros.
  const float s = 1.0f / std::sqrt(2.0f / 3 + 1e-5f);
  expect_near(run_cpu(g, {f32("x", {2, 3}, {1, 2, 3, 10, 10, 10})}), {-s, 0, s, 0, 0, 0});
}

TEST(TransformerOps, LayerNormAppliesGammaAndBeta) {
  Graph g;
  const int x = g.add_input("x", DType::F32, fixed_shape({1, 3}));
  const int gamma = g.add_constant("gamma", DType::F32, {3});
  const int beta = g.add_constant("beta", DType::F32, {3});
  g.add_output("y", g.add("layer_norm", "ln", {x, gamma, beta}, {{"eps", 0.0}}));
  const float s = std::sqrt(1.5f);  // 1 / sqrt(2/3)
  expect_near(run_cpu(g, {f32("x", {1, 3}, {4, 6, 8})},
                      {{"gamma", f32("gamma", {3}, {1, 2, 3})}, {"beta", f32("beta", {3}, {0.5f, 0.5f, -1})}}),
              {-s + 0.5f, 0.5f, 3 * s - 1});
}

TEST(TransformerOps, RmsNormWithAndWithoutGamma) {
  Graph g;
  const int x = g.add_input("x", DType::F32, fixed_shape({1, 2}));
  const int gamma = g.add_constant("gamma", DType::F32, {2});
  g.add_output("plain", g.add("rms_norm", "rms", {x}));
  g.add_output("scaled", g.add("rms_norm", "rms_gamma", {x, gamma}));
  Engine e(g, lookup({{"gamma", f32("gamma", {2}, {2, 0.5f})}}), EngineOptions{"cpu"});
  const auto out = e.run({f32("x", {1, 2}, {3, 4})});
  const float r = std::sqrt(12.5f + 1e-6f);  // mean of 9 and 16
  expect_near(out[0].to_f32(), {3 / r, 4 / r});
  expect_near(out[1].to_f32(), {6 / r, 2 / r});
}

// --- matmul

TEST(TransformerOps, Matmul2x2AndItsTransposesAndAlpha) {
  Graph g;
  const int a = g.add_input("a", DType::F32, fixed_shape({2, 2}));
  const int b = g.add_input("b", DType::F32, fixed_shape({2, 2}));
  g.add_output("ab", g.add("matmul", "ab", {a, b}));
  g.add_output("abt", g.add("matmul", "abt", {a, b}, {{"transpose_b", int64_t{1}}}));
  g.add_output("atb", g.add("matmul", "atb", {a, b}, {{"transpose_a", int64_t{1}}, {"alpha", 0.5}}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  const auto out = e.run({f32("a", {2, 2}, {1, 2, 3, 4}), f32("b", {2, 2}, {5, 6, 7, 8})});
  expect_near(out[0].to_f32(), {19, 22, 43, 50});
  expect_near(out[1].to_f32(), {17, 23, 39, 53});  // [[1,2],[3,4]] @ [[5,7],[6,8]]
  expect_near(out[2].to_f32(), {13, 15, 19, 22});  // 0.5 * [[1,3],[2,4]] @ [[5,6],[7,8]]
}

TEST(TransformerOps, MatmulBroadcastsBatchDims) {
  Graph g;
  const int a = g.add_input("a", DType::F32, fixed_shape({2, 1, 2, 2}));
  const int b = g.add_input("b", DType::F32, fixed_shape({2, 2}));
  const int c = g.add_input("c", DType::F32, fixed_shape({3, 2, 1}));
  g.add_output("ab", g.add("matmul", "ab", {a, b}));  // a rank-2 b against a rank-4 a
  g.add_output("ac", g.add("matmul", "ac", {a, c}));  // [2, 1] against [3] -> [2, 3]
  Engine e(g, lookup(), EngineOptions{"cpu"});
  // a: the identity, then the swap [[0, 1], [1, 0]].
  const auto out = e.run({f32("a", {2, 1, 2, 2}, {1, 0, 0, 1, 0, 1, 1, 0}), f32("b", {2, 2}, {1, 2, 3, 4}),
                          f32("c", {3, 2, 1}, {1, 0, 0, 1, 1, 1})});
  EXPECT_EQ(out[0].shape, (Shape{2, 1, 2, 2}));
  expect_near(out[0].to_f32(), {1, 2, 3, 4, 3, 4, 1, 2});
  EXPECT_EQ(out[1].shape, (Shape{2, 3, 2, 1}));
  // I @ c_j = c_j; swap @ c_j = c_j reversed.
  expect_near(out[1].to_f32(), {1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1});
}

TEST(TransformerOps, MatmulRefusesMismatchedInnerDims) {
  Graph g;
  const int a = g.add_input("a", DType::F32, fixed_shape({2, 3}));
  const int b = g.add_input("b", DType::F32, fixed_shape({2, 3}));
  g.add_output("y", g.add("matmul", "mm", {a, b}));
  EXPECT_NE(test::error_message([&] { g.validate(); }).find("[matmul] mm: a [2, 3] and b [2, 3] disagree on K"),
            std::string::npos);
}

// --- gather

TEST(TransformerOps, GatherLooksUpEmbeddingRows) {
  Graph g;
  const int table = g.add_constant("table", DType::F32, {3, 2});
  const int ids = g.add_input("ids", DType::I64, fixed_shape({1, 2}));
  g.add_output("y", g.add("gather", "embed", {table, ids}));
  Engine e(g, lookup({{"table", f32("table", {3, 2}, {1, 2, 3, 4, 5, 6})}}), EngineOptions{"cpu"});
  const auto out = e.run({i64("ids", {1, 2}, {2, 0})});
  EXPECT_EQ(out[0].shape, (Shape{1, 2, 2}));
  expect_near(out[0].to_f32(), {5, 6, 1, 2});
}

TEST(TransformerOps, GatherAlongAnInnerAxisWithI32IndicesAndIntegerData) {
  Graph g;
  const int data = g.add_input("data", DType::I64, fixed_shape({2, 3}));
  const int idx = g.add_input("idx", DType::I32, fixed_shape({3}));
  g.add_output("y", g.add("gather", "pick", {data, idx}, {{"axis", int64_t{-1}}}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  const auto out = e.run({i64("data", {2, 3}, {1, 2, 3, 4, 5, 6}), typed("idx", DType::I32, {3}, {2, 2, 0})});
  ASSERT_EQ(out[0].dtype, DType::I64);
  const int64_t* y = out[0].as<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(y, y + 6), (std::vector<int64_t>{3, 3, 1, 6, 6, 4}));
}

TEST(TransformerOps, GatherWithABatchDimReadsEachRowsOwnIndices) {
  Graph g;
  const int data = g.add_input("data", DType::F32, fixed_shape({2, 3, 2}));
  const int idx = g.add_input("idx", DType::I64, fixed_shape({2, 2}));
  g.add_output("y", g.add("gather", "top", {data, idx}, {{"axis", int64_t{1}}, {"batch_dims", int64_t{1}}}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  const auto out =
      e.run({f32("data", {2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), i64("idx", {2, 2}, {2, 0, 1, 1})});
  EXPECT_EQ(out[0].shape, (Shape{2, 2, 2}));
  expect_near(out[0].to_f32(), {5, 6, 1, 2, 9, 10, 9, 10});
}

TEST(TransformerOps, GatherBatchDimsMustMatch) {
  Graph g;
  const int data = g.add_input("data", DType::F32, fixed_shape({2, 3}));
  const int idx = g.add_input("idx", DType::I64, fixed_shape({3, 1}));
  g.add_output("y", g.add("gather", "top", {data, idx}, {{"axis", int64_t{1}}, {"batch_dims", int64_t{1}}}));
  EXPECT_NE(test::error_message([&] {
              g.validate();
            }).find("[gather] top: data [2, 3] and indices [3, 1] differ in batch dim 0"),
            std::string::npos);
}

TEST(TransformerOps, GatherOutOfRangeThrows) {
  Graph g;
  const int table = g.add_input("table", DType::F32, fixed_shape({3, 2}));
  const int ids = g.add_input("ids", DType::I64, fixed_shape({2}));
  g.add_output("y", g.add("gather", "embed", {table, ids}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  const HostTensor t = f32("table", {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(test::error_message([&] {
              e.run({t, i64("ids", {2}, {0, 3})});
            }),
            "[gather] embed: index 3 is out of range [0, 3)");
  EXPECT_EQ(test::error_message([&] {
              e.run({t, i64("ids", {2}, {-1, 0})});
            }),
            "[gather] embed: index -1 is out of range [0, 3)");
  expect_near(e.run({t, i64("ids", {2}, {1, 1})})[0].to_f32(), {3, 4, 3, 4});
}

// --- attention

namespace {

struct AttentionGraph {
  Graph g;
  int q, k, v;
};

// kv_batch: rows of k and v (0: b, as attention needs without kv_rows).
AttentionGraph attention_inputs(int64_t b, int64_t h, int64_t hkv, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                                int64_t kv_batch = 0) {
  AttentionGraph a;
  const int64_t kb = kv_batch ? kv_batch : b;
  a.q = a.g.add_input("q", DType::F32, fixed_shape({b, h, sq, d}));
  a.k = a.g.add_input("k", DType::F32, fixed_shape({kb, hkv, sk, d}));
  a.v = a.g.add_input("v", DType::F32, fixed_shape({kb, hkv, sk, dv}));
  return a;
}

}  // namespace

TEST(TransformerOps, AttentionWithOneKeyReturnsItsValue) {
  auto a = attention_inputs(1, 1, 1, 2, 1, 3, 2);
  a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v}));
  expect_near(run_cpu(a.g, {f32("q", {1, 1, 2, 3}, {1, -2, 3, 0.5f, 4, -1}), f32("k", {1, 1, 1, 3}, {2, 1, -1}),
                            f32("v", {1, 1, 1, 2}, {7, -3})}),
              {7, -3, 7, -3});
}

TEST(TransformerOps, CausalAttentionOfTwoTokens) {
  // D = 1, scale 1: query 1 scores the keys [0, ln 3] -> weights [1/4, 3/4].
  for (int64_t causal : {0, 1}) {
    auto a = attention_inputs(1, 1, 1, 2, 2, 1, 1);
    a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v}, {{"scale", 1.0}, {"causal", causal}}));
    const auto y = run_cpu(
        a.g, {f32("q", {1, 1, 2, 1}, {1, 1}), f32("k", {1, 1, 2, 1}, {0, kLn3}), f32("v", {1, 1, 2, 1}, {10, 20})});
    expect_near(y, {causal ? 10.0f : 17.5f, 17.5f});
  }
}

TEST(TransformerOps, AttentionScalesByOneOverSqrtDByDefault) {
  // D = 4: q . k1 = 4 * (ln 3 / 2), times 1/2 = ln 3 -> weights [1/4, 3/4].
  auto a = attention_inputs(1, 1, 1, 1, 2, 4, 1);
  a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v}));
  const float h = kLn3 / 2;
  expect_near(run_cpu(a.g, {f32("q", {1, 1, 1, 4}, {1, 1, 1, 1}), f32("k", {1, 1, 2, 4}, {0, 0, 0, 0, h, h, h, h}),
                            f32("v", {1, 1, 2, 1}, {0, 4})}),
              {3});
}

TEST(TransformerOps, AttentionMaskIsAdditiveAndAFullyMaskedRowGivesZeros) {
  auto a = attention_inputs(1, 1, 1, 2, 2, 1, 1);
  const int mask = a.g.add_input("mask", DType::F32, fixed_shape({1, 1, 2, 2}));
  a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v, mask}));
  // Equal scores; row 0 gets [0, ln 3] added, row 1 is masked out entirely.
  const auto y = run_cpu(a.g, {f32("q", {1, 1, 2, 1}, {1, 1}), f32("k", {1, 1, 2, 1}, {0, 0}),
                               f32("v", {1, 1, 2, 1}, {10, 20}), f32("mask", {1, 1, 2, 2}, {0, kLn3, -kInf, -kInf})});
  expect_near(y, {17.5f, 0});
}

TEST(TransformerOps, AttentionIgnoresKeysPastKvLength) {
  // Equal scores everywhere: each query averages the values it may see.
  for (DType lt : {DType::I32, DType::I64}) {
    auto a = attention_inputs(2, 1, 1, 1, 3, 1, 1);
    const int len = a.g.add_input("len", lt, fixed_shape({2}));
    a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v, -1, len}));
    const auto y = run_cpu(a.g, {f32("q", {2, 1, 1, 1}, {1, 1}), f32("k", {2, 1, 3, 1}, {0, 0, 0, 0, 0, 0}),
                                 f32("v", {2, 1, 3, 1}, {1, 2, 3, 1, 2, 3}), typed("len", lt, {2}, {1, 2})});
    expect_near(y, {1, 1.5f});
  }
}

TEST(TransformerOps, CausalAttentionAlignsQueriesWithTheLastKeys) {
  // Sq = 2 of Sk = 3: query 0 sees keys 0..1, query 1 all three (equal scores: means of v).
  auto a = attention_inputs(1, 1, 1, 2, 3, 1, 1);
  a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v}, {{"causal", int64_t{1}}}));
  expect_near(run_cpu(a.g, {f32("q", {1, 1, 2, 1}, {1, 1}), f32("k", {1, 1, 3, 1}, {0, 0, 0}),
                            f32("v", {1, 1, 3, 1}, {1, 2, 3})}),
              {1.5f, 2});
  // A decoder step (Sq = 1) with 3 valid keys of a 4-key cache sees keys 0..2, not the 100.
  auto d = attention_inputs(1, 1, 1, 1, 4, 1, 1);
  const int len = d.g.add_input("len", DType::I64, fixed_shape({1}));
  d.g.add_output("y", d.g.add("attention", "attn", {d.q, d.k, d.v, -1, len}, {{"causal", int64_t{1}}}));
  expect_near(run_cpu(d.g, {f32("q", {1, 1, 1, 1}, {1}), f32("k", {1, 1, 4, 1}, {0, 0, 0, 0}),
                            f32("v", {1, 1, 4, 1}, {1, 2, 3, 100}), i64("len", {1}, {3})}),
              {2});
}

TEST(TransformerOps, GroupedQueryAttentionSharesKvHeads) {
  // 4 query heads over 2 kv heads with one key each: heads 0, 1 read kv head 0; 2, 3 kv head 1.
  auto a = attention_inputs(1, 4, 2, 1, 1, 2, 1);
  a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v}));
  expect_near(run_cpu(a.g, {f32("q", {1, 4, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), f32("k", {1, 2, 1, 2}, {1, 1, 1, 1}),
                            f32("v", {1, 2, 1, 1}, {5, 9})}),
              {5, 5, 9, 9});
  auto bad = attention_inputs(1, 3, 2, 1, 1, 2, 1);
  bad.g.add_output("y", bad.g.add("attention", "attn", {bad.q, bad.k, bad.v}));
  EXPECT_NE(test::error_message([&] { bad.g.validate(); }).find("[attention] attn: 3 query heads do not group"),
            std::string::npos);
}

TEST(TransformerOps, AttentionRefusesAKvLengthPastTheKeys) {
  auto a = attention_inputs(1, 1, 1, 1, 2, 1, 1);
  const int len = a.g.add_input("len", DType::I64, fixed_shape({1}));
  a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v, -1, len}));
  Engine e(a.g, lookup(), EngineOptions{"cpu"});
  EXPECT_EQ(test::error_message([&] {
              e.run({f32("q", {1, 1, 1, 1}, {1}), f32("k", {1, 1, 2, 1}, {0, 0}), f32("v", {1, 1, 2, 1}, {1, 2}),
                     i64("len", {1}, {3})});
            }),
            "[attention] attn: kv_length[0] = 3 is out of range [0, 2]");
}

TEST(TransformerOps, AttentionReadsEachKeyFromTheBatchKvRowsNames) {
  // Three batches of one key-value pair per position; equal scores, so each query averages the
  // values it reads. Batch 0 reads position 0 from batch 2 and position 1 from itself; batch 1
  // position 0 from batch 0 (position 1 is past its length: the entry is never read); batch 2
  // both from batch 1.
  for (DType rt : {DType::I32, DType::I64}) {
    auto a = attention_inputs(3, 1, 1, 1, 2, 1, 1);
    const int len = a.g.add_input("len", DType::I64, fixed_shape({3}));
    const int rows = a.g.add_input("rows", rt, fixed_shape({3, 2}));
    a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v, -1, len, rows}));
    const std::vector<HostTensor> in = {f32("q", {3, 1, 1, 1}, {1, 1, 1}), f32("k", {3, 1, 2, 1}, {0, 0, 0, 0, 0, 0}),
                                        f32("v", {3, 1, 2, 1}, {1, 2, 10, 20, 100, 200}), i64("len", {3}, {2, 1, 2}),
                                        typed("rows", rt, {3, 2}, {2, 0, 0, -5, 1, 1})};
    expect_near(run_cpu(a.g, in), {(100.0f + 2) / 2, 1, (10.0f + 20) / 2});
    Engine e(a.g, lookup(), EngineOptions{"cpu"});
    std::vector<HostTensor> bad = in;
    bad.back() = typed("rows", rt, {3, 2}, {2, 0, 3, 0, 1, 1});
    EXPECT_EQ(test::error_message([&] { e.run(bad); }), "[attention] attn: kv_rows[1, 0] = 3 is out of range [0, 3)");
  }
}

TEST(TransformerOps, AttentionReadsFromFewerKeyRowsThanQueriesThroughKvRows) {
  // Four query rows (two beams of two sources) over two rows of keys and values, as beams read
  // their source's cross-attention keys: rows 0 and 1 read row 1, rows 2 and 3 row 0. Equal
  // scores, so each query averages its row's values. Without kv_rows the batches must match.
  auto a = attention_inputs(4, 1, 1, 1, 2, 1, 1, 2);
  const int rows = a.g.add_input("rows", DType::I32, fixed_shape({4, 2}));
  a.g.add_output("y", a.g.add("attention", "attn", {a.q, a.k, a.v, -1, -1, rows}));
  const std::vector<HostTensor> in = {f32("q", {4, 1, 1, 1}, {1, 1, 1, 1}), f32("k", {2, 1, 2, 1}, {0, 0, 0, 0}),
                                      f32("v", {2, 1, 2, 1}, {1, 3, 10, 30}),
                                      typed("rows", DType::I32, {4, 2}, {1, 1, 1, 1, 0, 0, 0, 0})};
  expect_near(run_cpu(a.g, in), {20, 20, 2, 2});
  Engine e(a.g, lookup(), EngineOptions{"cpu"});
  std::vector<HostTensor> bad = in;
  bad.back() = typed("rows", DType::I32, {4, 2}, {1, 1, 1, 1, 0, 2, 0, 0});
  EXPECT_EQ(test::error_message([&] { e.run(bad); }), "[attention] attn: kv_rows[2, 1] = 2 is out of range [0, 2)");

  auto b = attention_inputs(4, 1, 1, 1, 2, 1, 1, 2);
  b.g.add_output("y", b.g.add("attention", "attn", {b.q, b.k, b.v}));
  EXPECT_NE(test::error_message([&] { b.g.validate(); }).find("[attention] attn: q [4, 1, 1, 1], k [2, 1, 2, 1]"),
            std::string::npos);
}

// --- dynamic_update_slice

TEST(TransformerOps, DynamicUpdateSliceAppendsToAStateAcrossRuns) {
  Graph g;
  const int cache = g.add_state("cache", DType::F32, fixed_shape({4, 2}));
  const int x = g.add_input("x", DType::F32, fixed_shape({1, 2}));
  const int pos = g.add_input("pos", DType::I64, fixed_shape({1}));
  g.add_output("cache_out", g.add("dynamic_update_slice", "append", {cache, x, pos}, {{"axis", int64_t{0}}}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  expect_near(e.run({f32("x", {1, 2}, {1, 2}), i64("pos", {1}, {0})})[0].to_f32(), {1, 2, 0, 0, 0, 0, 0, 0});
  expect_near(e.run({f32("x", {1, 2}, {3, 4}), i64("pos", {1}, {2})})[0].to_f32(), {1, 2, 0, 0, 3, 4, 0, 0});
  EXPECT_EQ(test::error_message([&] {
              e.run({f32("x", {1, 2}, {5, 6}), i64("pos", {1}, {4})});
            }),
            "[dynamic_update_slice] append: slice [4, 5) is outside [0, 4) along axis 0");
  EXPECT_NE(test::error_message([&] { e.run({f32("x", {1, 2}, {5, 6}), i64("pos", {1}, {-1})}); }), "");
  expect_near(e.run({f32("x", {1, 2}, {5, 6}), i64("pos", {1}, {3})})[0].to_f32(), {1, 2, 0, 0, 3, 4, 5, 6});
  e.reset_states();
  expect_near(e.run({f32("x", {1, 2}, {7, 8}), i64("pos", {1}, {1})})[0].to_f32(), {0, 0, 7, 8, 0, 0, 0, 0});
}

TEST(TransformerOps, DynamicUpdateSliceWritesADecoderStepIntoEveryRowOfALargeCache) {
  // A step of 64 rows x 8 heads into a cache [64, 8, 12, 40] at each row's own position: 512
  // slices of 160 bytes (80 KiB), which the kernel spreads over the threads. Every element is
  // checked: the step's where each row's offset says, zeros elsewhere.
  const int64_t rows = 64, heads = 8, capacity = 12, d = 40;
  Graph g;
  const int cache = g.add_state("cache", DType::F32, fixed_shape({rows, heads, capacity, d}));
  const int x = g.add_input("x", DType::F32, fixed_shape({rows, heads, 1, d}));
  const int pos = g.add_input("pos", DType::I64, fixed_shape({rows}));
  g.add_output("y", g.add("dynamic_update_slice", "step", {cache, x, pos}, {{"axis", int64_t{2}}}));
  std::vector<float> step(static_cast<size_t>(rows * heads * d));
  for (size_t i = 0; i < step.size(); ++i) step[i] = static_cast<float>(i + 1);
  std::vector<int64_t> at(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) at[r] = (r * 5) % capacity;
  Engine e(g, lookup(), EngineOptions{"cpu"});
  const auto out = e.run({f32("x", {rows, heads, 1, d}, step), i64("pos", {rows}, at)});
  const float* y = out[0].as<float>();
  int64_t wrong = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t p = 0; p < capacity; ++p)
        for (int64_t j = 0; j < d; ++j) {
          const float want = p == at[r] ? step[(r * heads + h) * d + j] : 0.0f;
          wrong += y[((r * heads + h) * capacity + p) * d + j] != want;
        }
  EXPECT_EQ(wrong, 0);
}

TEST(TransformerOps, DynamicUpdateSliceAlongAnInnerAxisWithI32Offsets) {
  Graph g;
  const int cache = g.add_state("cache", DType::I32, fixed_shape({2, 3}));
  const int x = g.add_input("x", DType::I32, fixed_shape({2, 2}));
  const int pos = g.add_input("pos", DType::I32, fixed_shape({1}));
  g.add_output("y", g.add("dynamic_update_slice", "put", {cache, x, pos}, {{"axis", int64_t{1}}}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  const auto out = e.run({typed("x", DType::I32, {2, 2}, {1, 2, 3, 4}), typed("pos", DType::I32, {1}, {1})});
  ASSERT_EQ(out[0].dtype, DType::I32);
  const int32_t* y = out[0].as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(y, y + 6), (std::vector<int32_t>{0, 1, 2, 0, 3, 4}));
}

TEST(TransformerOps, DynamicUpdateSliceNeedsAStateTarget) {
  Graph g;
  const int target = g.add_input("target", DType::F32, fixed_shape({4}));
  const int x = g.add_input("x", DType::F32, fixed_shape({1}));
  const int pos = g.add_input("pos", DType::I64, fixed_shape({1}));
  g.add_output("y", g.add("dynamic_update_slice", "put", {target, x, pos}, {{"axis", int64_t{0}}}));
  EXPECT_NE(test::error_message([&] { Engine(g, lookup(), EngineOptions{"cpu"}); }).find("must be a state"),
            std::string::npos);
}

// One decoder step at a time: this step's key and value appended to fixed-capacity caches at
// `pos`, then attention over the pos + 1 valid keys.
TEST(TransformerOps, DecoderStepsAttendOverAGrowingKvCache) {
  Graph g;
  const int kc = g.add_state("k_cache", DType::F32, fixed_shape({1, 1, 4, 1}));
  const int vc = g.add_state("v_cache", DType::F32, fixed_shape({1, 1, 4, 1}));
  const int q = g.add_input("q", DType::F32, fixed_shape({1, 1, 1, 1}));
  const int k = g.add_input("k", DType::F32, fixed_shape({1, 1, 1, 1}));
  const int v = g.add_input("v", DType::F32, fixed_shape({1, 1, 1, 1}));
  const int pos = g.add_input("pos", DType::I64, fixed_shape({1}));
  const int len = g.add_input("len", DType::I64, fixed_shape({1}));
  const Attrs axis2 = {{"axis", int64_t{2}}};
  const int keys = g.add("dynamic_update_slice", "k_append", {kc, k, pos}, axis2);
  const int values = g.add("dynamic_update_slice", "v_append", {vc, v, pos}, axis2);
  g.add_output("y", g.add("attention", "attn", {q, keys, values, -1, len}, {{"scale", 1.0}, {"causal", int64_t{1}}}));
  Engine e(g, lookup(), EngineOptions{"cpu"});
  auto step = [&](int64_t p, float key, float value) {
    return e
        .run({f32("q", {1, 1, 1, 1}, {1}), f32("k", {1, 1, 1, 1}, {key}), f32("v", {1, 1, 1, 1}, {value}),
              i64("pos", {1}, {p}), i64("len", {1}, {p + 1})})[0]
        .to_f32()[0];
  };
  EXPECT_NEAR(step(0, 0, 10), 10, 1e-5);
  EXPECT_NEAR(step(1, kLn3, 20), 17.5, 1e-5);  // scores [0, ln 3]
  EXPECT_NEAR(step(2, 0, 30), 20, 1e-5);       // scores [0, ln 3, 0]: weights [1/5, 3/5, 1/5]
}

}  // namespace kiln
