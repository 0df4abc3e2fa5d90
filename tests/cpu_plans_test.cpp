// The CPU's kernel variants (oneDNN's implementations of a large convolution): each computes
// what the reference computes; the engine times them only when asked (kiln build) and otherwise
// takes a bundle's saved choice, made on the same CPU with the same threads, or the default.
#include <gtest/gtest.h>

#include "backends/cpu/threads.h"
#include "tests/gpu/test_graphs.h"

namespace kiln {
namespace {

// Batch 4 at 224 px: the 1x1 convs on the 112 x 112 map have 2^25 multiply-adds or more, the
// size from which the CPU conv offers oneDNN's other implementations.
const Bindings kSizes = test::image_sizes(4, 224, 224);

TEST(CpuPlans, EveryConvImplementationMatchesTheReference) {
  const ModelDefinition def = test::mbconv_graph(10, 3, 2, false);
  const Tensor input = test::random_input(def, 4, 224, 224, 11);
  Engine reference(def.graph(), def.constants(), EngineOptions{"cpu-reference"});
  const std::vector<float> want = test::logits(reference, input);
  const test::ForcedVariants forced(def, kSizes, "cpu");
  ASSERT_GE(forced.choices(), 5u);  // every conv
  for (const std::string variant : {"onednn_0", "onednn_1", "onednn_2"}) {
    auto e = forced.forced(variant);
    const std::vector<float> got = test::logits(*e, input);
    EXPECT_GE(test::ForcedVariants::taken(*e, kSizes, variant, "cpu"), variant == "onednn_0" ? 5 : 2)
        << "the forced plan was not used: " << variant;
    EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-4) << variant;
  }
}

TEST(CpuPlans, TimedOnlyWhenAskedAndSavedForTheSameCpuAndThreads) {
  const ModelDefinition def = test::mbconv_graph(10, 3, 2, false);
  // Without saved choices and without being asked to time, every conv takes oneDNN's pick.
  auto plain = test::engine(def, "cpu");
  plain->prepare(kSizes);
  const nlohmann::json defaults = plain->export_plans().at("cpu");
  for (const auto& [node, v] : defaults.at("plans").at(to_string(kSizes)).items()) EXPECT_EQ(v, "onednn_0") << node;
  const std::string hardware = defaults.at("device");
  EXPECT_NE(hardware.find("oneDNN"), std::string::npos) << hardware;
  EXPECT_NE(hardware.find(fmt::format("{} thread", cpu::threads())), std::string::npos) << hardware;

  // Asked to, it times them and says which it chose, for this CPU and thread count.
  EngineOptions timed{"cpu"};
  timed.time_cpu_variants = true;
  Engine planner(def.graph(), def.constants(), timed);
  planner.prepare(kSizes);
  const nlohmann::json chosen = planner.export_plans();
  EXPECT_EQ(chosen.at("cpu").at("device"), hardware);
  EXPECT_EQ(chosen.at("cpu").at("plans").at(to_string(kSizes)).size(),
            defaults.at("plans").at(to_string(kSizes)).size());

  // A saved choice holds on the same CPU and thread count, and is ignored elsewhere.
  const test::ForcedVariants forced(def, kSizes, "cpu");
  auto taken = [&](const nlohmann::json& saved) {
    auto e = test::engine(def, "cpu", saved);
    e->prepare(kSizes);
    return test::ForcedVariants::taken(*e, kSizes, "onednn_2", "cpu");
  };
  auto source = forced.forced("onednn_2");
  source->prepare(kSizes);
  nlohmann::json saved = source->export_plans();
  EXPECT_GE(taken(saved), 2);
  saved["cpu"]["device"] = hardware + " (another)";
  EXPECT_EQ(taken(saved), 0);
}

}  // namespace
}  // namespace kiln
