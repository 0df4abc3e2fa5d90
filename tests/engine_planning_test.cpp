// Engine::planning, which `kiln eval --profile` reports per graph: a plan is made once per set of
// sizes, a run on sizes planned before makes none, and the time it took is counted with it.
#include <gtest/gtest.h>

#include "backends/engine.h"
#include "graph/builder.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

TEST(EnginePlanning, CountsOnePlanPerSetOfSizes) {
  ModelDefinition def;
  GraphBuilder b(def);
  Tensor w({3, 4});
  for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  const int x = b.input("x", DType::F32, {{0, "batch"}, {4, ""}});
  b.output("y", b.linear(x, "fc", w, Tensor{}));
  def.validate();
  Engine engine(def.graph(), def.constants(), EngineOptions{"cpu"});
  EXPECT_EQ(engine.planning().plans, 0);
  const auto run = [&](int64_t batch) {
    std::vector<float> data(static_cast<size_t>(batch * 4), 1.0f);
    return engine.run({HostTensor::from_f32("x", {batch, 4}, data)});
  };
  run(2);
  run(2);
  const Engine::Planning first = engine.planning();
  EXPECT_EQ(first.plans, 1);
  EXPECT_GT(first.seconds, 0.0);
  EXPECT_LE(first.tuning_seconds, first.seconds);
  run(3);
  engine.prepare({{"batch", 3}});
  const Engine::Planning second = engine.planning();
  EXPECT_EQ(second.plans, 2);
  EXPECT_GT(second.seconds, first.seconds);
  run(2);
  EXPECT_EQ(engine.planning().plans, 2) << "batch 2 was planned before";
}

}  // namespace
}  // namespace kiln
