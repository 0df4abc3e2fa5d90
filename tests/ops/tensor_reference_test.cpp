// The CPU reference kernels of concat, split, slice, pad, upsample_nearest, max_pool, argmax,
// topk, where, the broadcasting binary ops and gather from a table stored as f16 against values
// worked out by hand, and their shape checks' messages.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/engine.h"
#include "core/dtype.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

HostTensor tensor(const std::string& name, DType dtype, const Shape& shape, const std::vector<float>& values) {
  HostTensor t = HostTensor::zeros(name, dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel()) << name;
  convert_from_f32(dtype, values.data(), t.data.data(), t.numel());
  return t;
}

HostTensor f32(const std::string& name, const Shape& shape, const std::vector<float>& values) {
  return HostTensor::from_f32(name, shape, values);
}

std::vector<int64_t> i64s(const HostTensor& t) {
  EXPECT_EQ(t.dtype, DType::I64) << t.name;
  return std::vector<int64_t>(t.as<int64_t>(), t.as<int64_t>() + t.numel());
}

// A graph of one `op` node named after the op, reading the given tensors as its inputs (in
// order), run on the CPU; returns every output of the node.
std::vector<HostTensor> run_op(const std::string& op, const std::vector<HostTensor>& inputs, Attrs attrs) {
  Graph g;
  std::vector<int> ids;
  for (const HostTensor& t : inputs) ids.push_back(g.add_input(t.name, t.dtype, fixed_shape(t.shape)));
  const auto outs = g.add_node(op, op, ids, std::move(attrs));
  for (size_t i = 0; i < outs.size(); ++i) g.add_output(fmt::format("y{}", i), outs[i]);
  Engine e(
      g, [](const std::string& name) -> ConstantView { fail("[test] no constant '{}'", name); }, EngineOptions{"cpu"});
  return e.run(inputs);
}

// The message of the error that building and shape-checking the node throws, or "".
std::string op_error(const std::string& op, const std::vector<HostTensor>& inputs, Attrs attrs) {
  return test::error_message([&] {
    Graph g;
    std::vector<int> ids;
    for (const HostTensor& t : inputs) ids.push_back(g.add_input(t.name, t.dtype, fixed_shape(t.shape)));
    const auto outs = g.add_node(op, op, ids, std::move(attrs));
    g.add_output("y", outs[0]);
    g.infer_shapes({});
  });
}

TEST(TensorOps, Concat) {
  auto y = run_op("concat", {f32("a", {2}, {1, 2}), f32("b", {1}, {3})}, {{"axis", int64_t{0}}});
  EXPECT_EQ(y[0].shape, Shape({3}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({1, 2, 3}));

  y = run_op("concat", {f32("a", {2, 2}, {1, 2, 3, 4}), f32("b", {2, 1}, {5, 6}), f32("c", {2, 0}, {})},
             {{"axis", int64_t{-1}}});
  EXPECT_EQ(y[0].shape, Shape({2, 3}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({1, 2, 5, 3, 4, 6}));

  // Element-size copies: f16 and i64 keep their types and values.
  y = run_op("concat", {tensor("a", DType::F16, {1, 2}, {0.5f, -1.5f}), tensor("b", DType::F16, {2, 2}, {1, 2, 3, 4})},
             {{"axis", int64_t{0}}});
  EXPECT_EQ(y[0].dtype, DType::F16);
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({0.5f, -1.5f, 1, 2, 3, 4}));
  y = run_op("concat",
             {HostTensor::from_i64("a", {1, 1}, {int64_t{1} << 40}), HostTensor::from_i64("b", {1, 2}, {-7, 8})},
             {{"axis", int64_t{1}}});
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({int64_t{1} << 40, -7, 8}));

  EXPECT_EQ(op_error("concat", {f32("a", {2, 2}, {1, 2, 3, 4}), f32("b", {3, 1}, {5, 6, 7})}, {{"axis", int64_t{1}}})
                .rfind("[concat] concat: ", 0),
            0u);
  EXPECT_EQ(op_error("concat", {f32("a", {2}, {1, 2})}, {{"axis", int64_t{1}}}),
            "[concat] concat: axis 1 is out of range for rank 1");
  EXPECT_EQ(op_error("concat", {f32("a", {2}, {1, 2}), HostTensor::from_i64("b", {1}, {3})}, {{"axis", int64_t{0}}}),
            "[concat] concat: inputs of different types (f32 and i64)");
}

TEST(TensorOps, Transpose) {
  // x[a, b, c] = 100a + 10b + c, [2, 3, 4] -> perm (2, 0, 1) -> y[c, a, b].
  std::vector<float> x;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) x.push_back(static_cast<float>(100 * a + 10 * b + c));
  std::vector<float> want;
  for (int c = 0; c < 4; ++c)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b) want.push_back(static_cast<float>(100 * a + 10 * b + c));
  for (DType t : {DType::F32, DType::F16}) {
    const auto y = run_op("transpose", {tensor("x", t, {2, 3, 4}, x)}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
    EXPECT_EQ(y[0].shape, Shape({4, 2, 3}));
    EXPECT_EQ(y[0].to_f32(), want) << dtype_name(t);
  }
  std::vector<int64_t> xi(x.begin(), x.end()), wi(want.begin(), want.end());
  const auto yi =
      run_op("transpose", {HostTensor::from_i64("x", {2, 3, 4}, xi)}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  EXPECT_EQ(i64s(yi[0]), wi);
  // An NCHW image to NHWC, large enough to run on several threads.
  std::vector<float> img(3 * 64 * 256);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<float>(i);
  const auto nhwc =
      run_op("transpose", {f32("x", {1, 3, 64, 256}, img)}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})[0].to_f32();
  for (int h = 0; h < 64; h += 9)
    for (int w = 0; w < 256; w += 17)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(nhwc[(h * 256 + w) * 3 + c], img[(c * 64 + h) * 256 + w]);
}

TEST(TensorOps, Split) {
  std::vector<float> x(10);
  for (int i = 0; i < 10; ++i) x[i] = static_cast<float>(i);
  auto y = run_op("split", {f32("x", {2, 5}, x)}, {{"axis", int64_t{-1}}, {"sizes", std::vector<int64_t>{2, 0, 3}}});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0].shape, Shape({2, 2}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({0, 1, 5, 6}));
  EXPECT_EQ(y[1].shape, Shape({2, 0}));
  EXPECT_EQ(y[2].shape, Shape({2, 3}));
  EXPECT_EQ(y[2].to_f32(), std::vector<float>({2, 3, 4, 7, 8, 9}));

  y = run_op("split", {HostTensor::from_i64("x", {3, 1}, {4, 5, 6})},
             {{"axis", int64_t{0}}, {"sizes", std::vector<int64_t>{1, 2}}});
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({4}));
  EXPECT_EQ(i64s(y[1]), std::vector<int64_t>({5, 6}));

  EXPECT_EQ(op_error("split", {f32("x", {2, 5}, x)}, {{"axis", int64_t{1}}, {"sizes", std::vector<int64_t>{2, 2}}}),
            "[split] split: sizes add up to 4, x's dim 1 is 5");
  EXPECT_EQ(op_error("split", {f32("x", {2, 5}, x)}, {{"axis", int64_t{1}}, {"sizes", std::vector<int64_t>{3, -1, 3}}}),
            "[split] split: size -1 is negative");
}

TEST(TensorOps, Slice) {
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  // Start -7 of 10 is 3; end 100 clamps to 10; step 2: 3, 5, 7, 9.
  auto y = run_op(
      "slice", {f32("x", {10}, std::vector<float>(x.begin(), x.begin() + 10))},
      {{"starts", std::vector<int64_t>{-7}}, {"ends", std::vector<int64_t>{100}}, {"steps", std::vector<int64_t>{2}}});
  EXPECT_EQ(y[0].shape, Shape({4}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({3, 5, 7, 9}));

  // x [3, 4]: rows from -2 (1) to 3, columns 1 to the end every 2nd.
  y = run_op("slice", {f32("x", {3, 4}, x)},
             {{"starts", std::vector<int64_t>{1, -2}},
              {"ends", std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 3}},
              {"axes", std::vector<int64_t>{-1, 0}},
              {"steps", std::vector<int64_t>{2, 1}}});
  EXPECT_EQ(y[0].shape, Shape({2, 2}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({5, 7, 9, 11}));

  // Steps that do not divide the span round up: columns 0 and 3 of 0..4 (step 3).
  y = run_op("slice", {tensor("x", DType::F16, {3, 4}, x)},
             {{"starts", std::vector<int64_t>{0}},
              {"ends", std::vector<int64_t>{4}},
              {"axes", std::vector<int64_t>{1}},
              {"steps", std::vector<int64_t>{3}}});
  EXPECT_EQ(y[0].dtype, DType::F16);
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({0, 3, 4, 7, 8, 11}));

  // An end before the start takes nothing; a start before the beginning clamps to 0.
  y = run_op("slice", {f32("x", {3, 4}, x)}, {{"starts", std::vector<int64_t>{3}}, {"ends", std::vector<int64_t>{1}}});
  EXPECT_EQ(y[0].shape, Shape({0, 4}));
  y = run_op(
      "slice", {f32("x", {3, 4}, x)},
      {{"starts", std::vector<int64_t>{-100}}, {"ends", std::vector<int64_t>{-3}}, {"axes", std::vector<int64_t>{1}}});
  EXPECT_EQ(y[0].shape, Shape({3, 1}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({0, 4, 8}));

  EXPECT_EQ(
      op_error(
          "slice", {f32("x", {3, 4}, x)},
          {{"starts", std::vector<int64_t>{0}}, {"ends", std::vector<int64_t>{2}}, {"steps", std::vector<int64_t>{0}}}),
      "[slice] slice: step 0 is not positive");
  EXPECT_EQ(op_error("slice", {f32("x", {3, 4}, x)},
                     {{"starts", std::vector<int64_t>{0, 0}},
                      {"ends", std::vector<int64_t>{2, 2}},
                      {"axes", std::vector<int64_t>{1, -1}}}),
            "[slice] slice: axis 1 is sliced twice");
}

TEST(TensorOps, Pad) {
  // [[1, 2], [3, 4]] with a row before and a column after, of 9s.
  auto y =
      run_op("pad", {f32("x", {2, 2}, {1, 2, 3, 4})}, {{"pads", std::vector<int64_t>{1, 0, 0, 1}}, {"value", 9.0}});
  EXPECT_EQ(y[0].shape, Shape({3, 3}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({9, 9, 9, 1, 2, 9, 3, 4, 9}));

  // The value is written in x's type: f16 -2.5, i32 7, and an i64 past what f32 holds exactly.
  y = run_op("pad", {tensor("x", DType::F16, {2}, {1, 2})}, {{"pads", std::vector<int64_t>{2, 1}}, {"value", -2.5}});
  EXPECT_EQ(y[0].dtype, DType::F16);
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({-2.5f, -2.5f, 1, 2, -2.5f}));
  y = run_op("pad", {tensor("x", DType::I32, {1, 1}, {5})},
             {{"pads", std::vector<int64_t>{0, 1, 1, 0}}, {"value", 7.0}});
  EXPECT_EQ(y[0].shape, Shape({2, 2}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({7, 5, 7, 7}));
  const int64_t big = (int64_t{1} << 40) + 1;
  y = run_op("pad", {HostTensor::from_i64("x", {1}, {3})},
             {{"pads", std::vector<int64_t>{0, 1}}, {"value", static_cast<double>(big)}});
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({3, big}));

  // Padding in the middle dims of NHWC: [1, 1, 2, 1] -> [1, 3, 3, 1], zeros.
  y = run_op("pad", {f32("x", {1, 1, 2, 1}, {1, 2})}, {{"pads", std::vector<int64_t>{0, 1, 0, 0, 0, 1, 1, 0}}});
  EXPECT_EQ(y[0].shape, Shape({1, 3, 3, 1}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({0, 0, 0, 1, 2, 0, 0, 0, 0}));

  EXPECT_EQ(op_error("pad", {f32("x", {2, 2}, {1, 2, 3, 4})}, {{"pads", std::vector<int64_t>{1, 1}}}),
            "[pad] pad: 2 pads for x [2, 2] (2 per dim)");
  EXPECT_EQ(
      op_error("pad", {tensor("x", DType::I32, {1}, {1})}, {{"pads", std::vector<int64_t>{1, 1}}, {"value", 0.5}}),
      "[pad] pad: value 0.5 is not an i32");
}

TEST(TensorOps, UpsampleNearest) {
  auto y = run_op("upsample_nearest", {f32("x", {1, 2, 2, 1}, {1, 2, 3, 4})}, {{"scale", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(y[0].shape, Shape({1, 4, 4, 1}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));

  // Two channels, rows doubled and columns tripled: each pixel's channels move together.
  y = run_op("upsample_nearest", {tensor("x", DType::F16, {1, 1, 2, 2}, {1, 2, 3, 4})},
             {{"scale", std::vector<int64_t>{2, 3}}});
  EXPECT_EQ(y[0].shape, Shape({1, 2, 6, 2}));
  const std::vector<float> row = {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4};
  std::vector<float> want = row;
  want.insert(want.end(), row.begin(), row.end());
  EXPECT_EQ(y[0].to_f32(), want);

  EXPECT_EQ(op_error("upsample_nearest", {f32("x", {1, 1, 1, 1}, {1})}, {{"scale", std::vector<int64_t>{0, 2}}}),
            "[upsample_nearest] upsample_nearest: scale must be [sh, sw], each 1..64");
}

TEST(TensorOps, MaxPool) {
  // All negative, so a padding cell that won would show as 0. 3x3 stride 2 pad 1 on 3x3:
  // windows are the 2x2 corners.
  auto y = run_op("max_pool", {f32("x", {1, 3, 3, 1}, {-1, -2, -3, -4, -5, -6, -7, -8, -9})},
                  {{"kernel", std::vector<int64_t>{3, 3}},
                   {"stride", std::vector<int64_t>{2, 2}},
                   {"pad", std::vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_EQ(y[0].shape, Shape({1, 2, 2, 1}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({-1, -2, -4, -5}));

  // SPPF's 5x5 stride 1 pad 2 on 4x4 = 0..15: out(i, j) = x(min(i + 2, 3), min(j + 2, 3)).
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  y = run_op("max_pool", {f32("x", {1, 4, 4, 1}, x)},
             {{"kernel", std::vector<int64_t>{5, 5}},
              {"stride", std::vector<int64_t>{1, 1}},
              {"pad", std::vector<int64_t>{2, 2, 2, 2}}});
  EXPECT_EQ(y[0].shape, Shape({1, 4, 4, 1}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({10, 11, 11, 11, 14, 15, 15, 15, 14, 15, 15, 15, 14, 15, 15, 15}));

  // Default stride (the kernel), two channels pooled separately, f16.
  y = run_op("max_pool", {tensor("x", DType::F16, {1, 2, 4, 2}, {1, 8, 2, 7, 3, 6, 4, 5, 5, 4, 6, 3, 7, 2, 8, 1})},
             {{"kernel", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(y[0].dtype, DType::F16);
  EXPECT_EQ(y[0].shape, Shape({1, 1, 2, 2}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({6, 8, 8, 6}));

  // NaN propagates, wherever it sits in the window.
  y = run_op("max_pool", {f32("x", {1, 1, 4, 1}, {NAN, 1, 2, NAN})}, {{"kernel", std::vector<int64_t>{1, 2}}});
  const auto v = y[0].to_f32();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));

  EXPECT_EQ(op_error("max_pool", {f32("x", {1, 4, 4, 1}, x)},
                     {{"kernel", std::vector<int64_t>{2, 2}}, {"pad", std::vector<int64_t>{2, 0, 0, 0}}}),
            "[max_pool] max_pool: pad must be [top, left, bottom, right], each >= 0 and smaller than the kernel");
  EXPECT_EQ(op_error("max_pool", {f32("x", {1, 2, 2, 1}, {1, 2, 3, 4})}, {{"kernel", std::vector<int64_t>{3, 3}}}),
            "[max_pool] max_pool: x [1, 2, 2, 1] padded is smaller than the 3x3 kernel");
}

TEST(TensorOps, Argmax) {
  // Ties go to the lowest index.
  auto y = run_op("argmax", {f32("x", {2, 4}, {1, 3, 3, 2, 5, 5, 5, 5})}, {});
  EXPECT_EQ(y[0].shape, Shape({2}));
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({1, 0}));

  // NaN beats every number; the first NaN wins.
  y = run_op("argmax", {f32("x", {4}, {1, NAN, 7, NAN})}, {});
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({1}));

  // Along axis 0 with keepdims: columns (1, 4, 4) and (9, 2, 9).
  y = run_op("argmax", {tensor("x", DType::I32, {3, 2}, {1, 9, 4, 2, 4, 9})},
             {{"axis", int64_t{0}}, {"keepdims", int64_t{1}}});
  EXPECT_EQ(y[0].shape, Shape({1, 2}));
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({1, 0}));

  // The middle axis of [2, 3, 2], f16.
  y = run_op("argmax", {tensor("x", DType::F16, {2, 3, 2}, {0, 5, 2, 1, 1, 3, -1, -2, -3, -4, -0.5f, -6})},
             {{"axis", int64_t{-2}}});
  EXPECT_EQ(y[0].shape, Shape({2, 2}));
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({1, 0, 2, 0}));

  EXPECT_EQ(op_error("argmax", {f32("x", {2, 0}, {})}, {}), "[argmax] argmax: x [2, 0] is empty along axis 1");
}

TEST(TensorOps, Topk) {
  const HostTensor x = f32("x", {2, 5}, {1, 4, 2, 4, 3, 0, -1, 5, 5, -2});
  auto y = run_op("topk", {x}, {{"k", int64_t{3}}});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0].shape, Shape({2, 3}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({4, 4, 3, 5, 5, 0}));
  EXPECT_EQ(i64s(y[1]), std::vector<int64_t>({1, 3, 4, 2, 3, 0}));

  y = run_op("topk", {x}, {{"k", int64_t{2}}, {"largest", int64_t{0}}});
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({1, 2, -2, -1}));
  EXPECT_EQ(i64s(y[1]), std::vector<int64_t>({0, 2, 4, 1}));

  // k = the whole axis: a stable descending sort.
  y = run_op("topk", {x}, {{"k", int64_t{5}}});
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({4, 4, 3, 2, 1, 5, 5, 0, -1, -2}));
  EXPECT_EQ(i64s(y[1]), std::vector<int64_t>({1, 3, 4, 2, 0, 2, 3, 0, 1, 4}));

  // Along axis 0, f16: columns (1, 5, 3) and (6, 2, 4).
  y = run_op("topk", {tensor("x", DType::F16, {3, 2}, {1, 6, 5, 2, 3, 4})}, {{"k", int64_t{2}}, {"axis", int64_t{0}}});
  EXPECT_EQ(y[0].dtype, DType::F16);
  EXPECT_EQ(y[0].shape, Shape({2, 2}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({5, 6, 3, 4}));
  EXPECT_EQ(i64s(y[1]), std::vector<int64_t>({1, 0, 2, 2}));

  // NaN counts as largest: first when largest, last when smallest.
  y = run_op("topk", {f32("x", {3}, {2, NAN, 5})}, {{"k", int64_t{2}}});
  EXPECT_EQ(i64s(y[1]), std::vector<int64_t>({1, 2}));
  y = run_op("topk", {f32("x", {3}, {2, NAN, 5})}, {{"k", int64_t{3}}, {"largest", int64_t{0}}});
  EXPECT_EQ(i64s(y[1]), std::vector<int64_t>({0, 2, 1}));

  EXPECT_EQ(op_error("topk", {x}, {{"k", int64_t{6}}}), "[topk] topk: k = 6 is more than x [2, 5] has along axis 1");
  EXPECT_EQ(op_error("topk", {x}, {{"k", int64_t{0}}}), "[topk] topk: k must be at least 1");
}

TEST(TensorOps, Where) {
  // cond [2, 1], a [3], b [1] broadcast to [2, 3].
  auto y =
      run_op("where", {tensor("cond", DType::Bool, {2, 1}, {1, 0}), f32("a", {3}, {1, 2, 3}), f32("b", {1}, {-1})}, {});
  EXPECT_EQ(y[0].shape, Shape({2, 3}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({1, 2, 3, -1, -1, -1}));

  // Elementwise cond, i64 values past f32's exact range.
  const int64_t big = (int64_t{1} << 50) + 3;
  y = run_op("where",
             {tensor("cond", DType::Bool, {1, 4}, {1, 0, 0, 1}), HostTensor::from_i64("a", {2, 1}, {big, -big}),
              HostTensor::from_i64("b", {4}, {10, 20, 30, 40})},
             {});
  EXPECT_EQ(y[0].shape, Shape({2, 4}));
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({big, 20, 30, big, -big, 20, 30, -big}));

  EXPECT_EQ(op_error("where", {f32("cond", {2}, {1, 0}), f32("a", {2}, {1, 2}), f32("b", {2}, {3, 4})}, {}),
            "[where] where: cond must be a bool tensor, not f32");
  EXPECT_EQ(
      op_error("where", {tensor("cond", DType::Bool, {2}, {1, 0}), f32("a", {3}, {1, 2, 3}), f32("b", {1}, {4})}, {}),
      "[where] where: shapes [2], [3] and [1] do not broadcast");
}

// An fp16 bundle stores an f32 embedding table as halves; gather reads the rows it needs from
// where the table is stored (its engine makes no f32 copy, and the plan says so) and widens them.
TEST(TensorOps, GatherFromATableStoredAsHalves) {
  const HostTensor table = tensor("table", DType::F16, {4, 3}, {0.1f, 1, 2, 3, 4, 5, 6, 7, 8, -9, 10, 65504});
  Graph g;
  const int t = g.add_constant("table", DType::F32, {4, 3});
  const int ids = g.add_input("ids", DType::I64, fixed_shape({2, 2}));
  g.add_output("y", g.add("gather", "embed", {t, ids}, {{"axis", int64_t{0}}, {"batch_dims", int64_t{0}}}));
  for (const char* device : {"cpu", "cpu-reference"}) {
    Engine e(
        g,
        [&](const std::string&) {
          return ConstantView{table.dtype, table.shape, table.data};
        },
        EngineOptions{device});
    const auto y = e.run({tensor("ids", DType::I64, {2, 2}, {3, 0, 0, 2})})[0];
    EXPECT_EQ(e.plan_summary({}), std::vector<std::string>({"gather embed [cpu] rows converted from f16"})) << device;
    ASSERT_EQ(y.dtype, DType::F32) << device;
    ASSERT_EQ(y.shape, Shape({2, 2, 3})) << device;
    const float tenth = 0.0999755859375f;  // 0.1 as a half
    EXPECT_EQ(y.to_f32(), std::vector<float>({-9, 10, 65504, tenth, 1, 2, tenth, 1, 2, 6, 7, 8})) << device;
    EXPECT_NE(test::error_message([&] { e.run({tensor("ids", DType::I64, {2, 2}, {4, 0, 0, 0})}); }), "") << device;
  }
}

// The fast kernels' linear reads an fp16 bundle's weights as halves where they are stored (the
// plan says so) and computes what f32 weights of the same values give: the products are exact,
// the sums in another order.
TEST(TensorOps, LinearReadsWeightsStoredAsHalves) {
  std::vector<float> w(3 * 37), x(2 * 37);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7) % 13) * 0.125f - 0.75f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 5) % 11) * 0.25f - 1.0f;
  const HostTensor weights = tensor("w", DType::F16, {3, 37}, w);
  Graph g;
  const int in = g.add_input("x", DType::F32, fixed_shape({2, 37}));
  const int wv = g.add_constant("w", DType::F32, {3, 37});
  g.add_output("y", g.add("linear", "fc", {in, wv}, {{"act", std::string("none")}}));
  Engine e(
      g,
      [&](const std::string&) {
        return ConstantView{weights.dtype, weights.shape, weights.data};
      },
      EngineOptions{"cpu"});
  const auto y = e.run({f32("x", {2, 37}, x)})[0].to_f32();
  EXPECT_EQ(e.plan_summary({}), std::vector<std::string>({"linear fc [cpu] onednn f16-weights"}));
  ASSERT_EQ(y.size(), 6u);
  for (int r = 0; r < 2; ++r)
    for (int n = 0; n < 3; ++n) {
      double want = 0;
      for (int k = 0; k < 37; ++k) want += static_cast<double>(x[r * 37 + k]) * w[n * 37 + k];
      EXPECT_NEAR(y[r * 3 + n], want, 1e-5) << r << " " << n;
    }
}

TEST(TensorOps, BinaryBroadcasting) {
  // Same shapes; a row against a column (each broadcast along the other's dim); a [1] scalar.
  auto y = run_op("sub", {f32("a", {2, 2}, {5, 6, 7, 8}), f32("b", {2, 2}, {1, 2, 3, 4})}, {});
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({4, 4, 4, 4}));
  y = run_op("add", {f32("a", {2, 1, 3}, {1, 2, 3, 4, 5, 6}), f32("b", {2, 1}, {10, 20})}, {});
  EXPECT_EQ(y[0].shape, Shape({2, 2, 3}));
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26}));
  y = run_op("mul", {f32("a", {1}, {3}), f32("b", {2, 3}, {1, 2, 3, 4, 5, 6})}, {});
  EXPECT_EQ(y[0].to_f32(), std::vector<float>({3, 6, 9, 12, 15, 18}));
  // A squeeze-excite gate: [N, H, W, C] * [N, 1, 1, C].
  std::vector<float> x(2 * 2 * 2 * 3), want;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const std::vector<float> gate = {1, 0, -1, 2, 3, 4};
  for (size_t i = 0; i < x.size(); ++i) want.push_back(x[i] * gate[i / 12 * 3 + i % 3]);
  y = run_op("mul", {f32("x", {2, 2, 2, 3}, x), f32("g", {2, 1, 1, 3}, gate)}, {});
  EXPECT_EQ(y[0].to_f32(), want);
  // Integers: i64 division truncates, and by zero is an error.
  y = run_op("div", {HostTensor::from_i64("a", {3}, {7, -7, 9}), HostTensor::from_i64("b", {1}, {2})}, {});
  EXPECT_EQ(i64s(y[0]), std::vector<int64_t>({3, -3, 4}));
  EXPECT_NE(test::error_message([] {
              run_op("div", {HostTensor::from_i64("a", {2}, {1, 2}), HostTensor::from_i64("b", {2}, {1, 0})}, {});
            }).find("integer division by zero"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
