// Engine::node_bytes, which `kiln bench --profile` divides by each node's time: every input,
// weights included, read once and every output written once; a view moves nothing and a value
// taken twice is read once. Counted by hand on a small graph.
#include <gtest/gtest.h>

#include "backends/engine.h"
#include "graph/builder.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

TEST(NodeBytes, CountsEachTensorOnceAndViewsNotAtAll) {
  ModelDefinition def;
  GraphBuilder b(def);
  Tensor w({6, 4});
  for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  const int x = b.input("x", DType::F32, {{0, "batch"}, {4, ""}});
  const int h = b.linear(x, "fc", w, Tensor{});                                             // [batch, 6]
  const int sq = b.op("mul", "square", {h, h});                                             // h read once
  const int v = b.op("reshape", "view", {sq}, {{"shape", std::vector<int64_t>{0, 2, 3}}});  // a view
  b.output("y", v);
  def.validate();
  Engine engine(def.graph(), def.constants(), EngineOptions{"cpu"});
  const Bindings sizes = {{"batch", 5}};
  EXPECT_THROW(engine.node_bytes(sizes), std::exception) << "no plan yet";
  engine.prepare(sizes);
  const std::vector<double> bytes = engine.node_bytes(sizes);
  const auto& nodes = engine.executed().nodes();
  ASSERT_EQ(bytes.size(), nodes.size());
  std::map<std::string, double> by_name;
  for (size_t i = 0; i < nodes.size(); ++i) by_name[nodes[i].name] = bytes[i];
  ASSERT_EQ(by_name.count("fc"), 1u);
  ASSERT_EQ(by_name.count("square"), 1u);
  ASSERT_EQ(by_name.count("view"), 1u);
  EXPECT_EQ(by_name["fc"], (5 * 4 + 6 * 4 + 5 * 6) * 4.0);  // x, the weights, h
  EXPECT_EQ(by_name["square"], (5 * 6 + 5 * 6) * 4.0);      // h once, its square
  EXPECT_EQ(by_name["view"], 0.0);
  // Summed per group as the times are.
  double total = 0;
  for (const auto& [group, sum] : engine.group_sums(bytes)) total += sum;
  EXPECT_EQ(total, (5 * 4 + 6 * 4 + 5 * 6 + 5 * 6 + 5 * 6) * 4.0);
}

}  // namespace
}  // namespace kiln
