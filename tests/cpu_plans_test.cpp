// The CPU's kernel variants (oneDNN's implementations of a large convolution; a depthwise conv in
// parts of its output rows; a gated conv with the gate in its weights): each computes what the reference computes; the
// engine times them only when asked (kiln build) and otherwise takes a bundle's saved choice, made on the same CPU with
// the same threads, or the default.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/threads.h"
#include "backends/timing_cache.h"
#include "core/read_file.h"
#include "tests/test_graphs.h"

namespace kiln {
namespace {

// Batch 4 at 224 px: the 1x1 convs on the 112 x 112 map have 2^25 multiply-adds or more, the
// size from which the CPU conv offers oneDNN's other implementations.
const Bindings kSizes = test::image_sizes(4, 224, 224);

// How many nodes of an engine's plan for kSizes run each variant.
std::map<std::string, int> variant_counts(Engine& e) {
  std::map<std::string, int> counts;
  const nlohmann::json plans = e.export_plans();  // items() needs a named object
  for (const auto& [node, v] : plans.at("cpu").at("plans").at(to_string(kSizes)).items()) ++counts[v];
  return counts;
}

TEST(CpuPlans, EveryConvImplementationMatchesTheReference) {
  const ModelDefinition def = test::mbconv_graph(10, 3, 2, false);
  const Tensor input = test::random_input(def, 4, 224, 224, 11);
  Engine reference(def.graph(), def.constants(), EngineOptions{"cpu-reference"});
  const std::vector<float> want = test::logits(reference, input);
  const test::ForcedVariants forced(def, kSizes, "cpu");
  ASSERT_GE(forced.choices(), 5u);  // every conv
  int others = 0;                   // nodes that ran an implementation other than oneDNN's pick
  for (const std::string& variant : test::kCpuConvVariantNames) {
    auto e = forced.forced(variant);
    const std::vector<float> got = test::logits(*e, input);
    const int taken = test::ForcedVariants::taken(*e, kSizes, variant, "cpu");
    if (variant == "onednn") {
      EXPECT_GE(taken, 5) << "the forced plan was not used";
    }
    if (variant != "onednn") others += taken;
    EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-4) << variant;
  }
  // Each large 1x1 conv has at least one other implementation on any x86 CPU with AVX2.
  EXPECT_GE(others, 3);
}

// Sets the CPU thread count while alive, then restores it.
class ThreadsFor {
 public:
  explicit ThreadsFor(int n) { cpu::set_threads(n); }
  ~ThreadsFor() { cpu::set_threads(before_); }
  ThreadsFor(const ThreadsFor&) = delete;
  ThreadsFor& operator=(const ThreadsFor&) = delete;

 private:
  int before_ = cpu::threads();
};

// Convs split by output rows (onednn_row_parts): parts of several rows, of one row each, and
// with more parts than threads, against the reference; depthwise convs with stride 1 and 2, 3x3
// and 5x5 kernels, TF "same" padding (uneven) too, the stem (NCHW input) and the 1x1 convs,
// batch 1 and 3. The split and the sums of each row do not depend on the thread count.
TEST(CpuPlans, ConvsInRowPartsMatchTheReference) {
  for (const auto& [k, stride, same] : {std::tuple{3, 2, false}, std::tuple{5, 1, true}, std::tuple{5, 2, true}}) {
    const ModelDefinition def = test::mbconv_graph(10, k, stride, same);
    for (const auto& [batch, size, threads] : {std::tuple{1, 45, 4}, std::tuple{1, 30, 64}, std::tuple{3, 37, 8}}) {
      SCOPED_TRACE(
          fmt::format("k {} stride {} same {}, batch {} at {} px, {} threads", k, stride, same, batch, size, threads));
      const Bindings sizes = test::image_sizes(batch, size, size);
      const Tensor input = test::random_input(def, batch, size, size, 5);
      Engine reference(def.graph(), def.constants(), EngineOptions{"cpu-reference"});
      const std::vector<float> want = test::logits(reference, input);
      const ThreadsFor set(threads);
      const test::ForcedVariants forced(def, sizes, "cpu");
      auto e = forced.forced("onednn_row_parts");
      const std::vector<float> got = test::logits(*e, input);
      EXPECT_EQ(test::ForcedVariants::taken(*e, sizes, "onednn_row_parts", "cpu"), 7) << "all but the residual conv";
      EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-4);
    }
  }
}

// Convs with no squeeze-excite after them (detection networks' large-kernel depthwise blocks):
// the row parts apply their SiLU, or none, without the sums.
TEST(CpuPlans, ConvsInRowPartsWithoutAMeanMatchTheReference) {
  test::GraphMaker g(9);
  int x = g.conv(g.input(3), 32, 3, 2, false, Activation::SiLU);
  x = g.conv(x, 32, 7, 1, true, Activation::SiLU);
  x = g.conv(x, 32, 3, 2, true, Activation::None);
  x = g.linear(g.flatten(g.pool(x)), 10, Activation::None);
  g.finish(x);
  const Bindings sizes = test::image_sizes(1, 41, 41);
  const Tensor input = test::random_input(g.def, 1, 41, 41, 3);
  Engine reference(g.def.graph(), g.def.constants(), EngineOptions{"cpu-reference"});
  const std::vector<float> want = test::logits(reference, input);
  const ThreadsFor set(3);
  const test::ForcedVariants forced(g.def, sizes, "cpu");
  auto e = forced.forced("onednn_row_parts");
  const std::vector<float> got = test::logits(*e, input);
  EXPECT_EQ(test::ForcedVariants::taken(*e, sizes, "onednn_row_parts", "cpu"), 3);
  EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-4);
}

// Gated convs with the gate in their weights (onednn_gated_weights), against the reference: with
// and without a residual, batch 1 and 3 (each image its own gate), 3x3 and 1x1, the weights
// scaled on one thread (small layers) and over the threads (a 256 -> 160 conv).
TEST(CpuPlans, GatedConvsWithTheGateInTheirWeightsMatchTheReference) {
  test::GraphMaker wide(4);
  int x = wide.conv(wide.input(3), 256, 3, 2, false, Activation::SiLU);
  x = wide.squeeze_excite(x, 16);
  x = wide.conv(x, 160, 1, 1, false, Activation::None);
  x = wide.squeeze_excite(x, 8);
  x = wide.conv(x, 24, 3, 1, false, Activation::SiLU);
  wide.finish(wide.linear(wide.flatten(wide.pool(x)), 10, Activation::None));
  const std::tuple<std::string, ModelDefinition, int> cases[] = {{"mbconv", test::mbconv_graph(10, 3, 2, false), 2},
                                                                 {"wide", wide.def, 2}};
  for (const auto& [name, def, gated] : cases)
    for (const int batch : {1, 3}) {
      SCOPED_TRACE(fmt::format("{} at batch {}", name, batch));
      const Bindings sizes = test::image_sizes(batch, 29, 29);
      const Tensor input = test::random_input(def, batch, 29, 29, 8);
      Engine reference(def.graph(), def.constants(), EngineOptions{"cpu-reference"});
      const std::vector<float> want = test::logits(reference, input);
      const ThreadsFor set(3);
      const test::ForcedVariants forced(def, sizes, "cpu");
      auto e = forced.forced("onednn_gated_weights");
      const std::vector<float> got = test::logits(*e, input);
      EXPECT_EQ(test::ForcedVariants::taken(*e, sizes, "onednn_gated_weights", "cpu"), gated);
      EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-4);
    }
}

// A CPU backend whose timings are made up: the last variant of every kernel is the fastest by
// far. It counts the timings asked of it.
class RiggedCpu : public CpuBackend {
 public:
  int timings = 0;
  std::vector<double> time_replayed_ms(const std::vector<std::function<void()>>& work) override {
    ++timings;
    for (const auto& w : work) w();
    std::vector<double> ms(work.size(), 1.0);
    ms.back() = 0.5;
    return ms;
  }
};

TEST(CpuPlans, TimedOnlyWhenAskedAndSavedForTheSameCpuAndThreads) {
  const ModelDefinition def = test::mbconv_graph(10, 3, 2, false);
  // Without saved choices and without being asked to time, nothing is timed and every conv takes
  // oneDNN's pick.
  auto rigged = std::make_shared<RiggedCpu>();
  EngineOptions plain{"cpu"};
  plain.backend = rigged;
  Engine untimed(def.graph(), def.constants(), plain);
  untimed.prepare(kSizes);
  EXPECT_EQ(rigged->timings, 0);
  EXPECT_EQ(variant_counts(untimed), (std::map<std::string, int>{{"onednn", 8}}));
  const std::string hardware = untimed.export_plans().at("cpu").at("device");
  EXPECT_NE(hardware.find("oneDNN"), std::string::npos) << hardware;
  EXPECT_NE(hardware.find(fmt::format("{} thread", cpu::threads())), std::string::npos) << hardware;

  // Asked to, it times the convs that offer several implementations and takes the fastest.
  EngineOptions timed = plain;
  timed.time_cpu_variants = true;
  Engine planner(def.graph(), def.constants(), timed);
  planner.prepare(kSizes);
  EXPECT_GE(rigged->timings, 3);
  const std::map<std::string, int> chosen = variant_counts(planner);
  const int picks = chosen.count("onednn") ? chosen.at("onednn") : 0;
  EXPECT_EQ(picks, 8 - rigged->timings) << "the convs not timed keep oneDNN's pick";
  const nlohmann::json saved = planner.export_plans();
  EXPECT_EQ(saved.at("cpu").at("device"), hardware);

  // The saved choice holds on the same CPU and thread count, untimed; elsewhere oneDNN's pick.
  auto with_saved = [&](const nlohmann::json& plans) {
    auto e = test::engine(def, "cpu", plans);
    e->prepare(kSizes);
    return variant_counts(*e);
  };
  EXPECT_EQ(with_saved(saved), chosen);
  nlohmann::json elsewhere = saved;
  elsewhere["cpu"]["device"] = hardware + " (another)";
  EXPECT_EQ(with_saved(elsewhere), (std::map<std::string, int>{{"onednn", 8}}));
}

// What one planner timed, the next one (another process: a new backend, a new cache read from
// the file) takes from the timing cache without timing; other hardware and another build of
// kiln time again, and a damaged file is set aside, not trusted.
TEST(CpuPlans, ATimingCacheSparesTheNextPlannerTheTimings) {
  const ModelDefinition def = test::mbconv_graph(10, 3, 2, false);
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("kiln-timing-cache-test-{}.json", ::getpid())).string();
  std::filesystem::remove(path);
  struct Run {
    int timings = 0;
    Engine::Planning planning;
    nlohmann::json plans;
  };
  auto plan = [&](const std::string& build) {
    auto rigged = std::make_shared<RiggedCpu>();
    EngineOptions o{"cpu"};
    o.backend = rigged;
    o.time_cpu_variants = true;
    o.timing_cache = std::make_shared<TimingCache>(path, build);
    Engine e(def.graph(), def.constants(), o);
    e.prepare(kSizes);
    return Run{rigged->timings, e.planning(), e.export_plans()};
  };
  const Run first = plan("build 1");
  EXPECT_GE(first.timings, 3);
  EXPECT_GE(first.planning.timed, 1);
  EXPECT_LE(first.planning.timed, first.timings);  // a problem is timed in one or two rounds
  EXPECT_EQ(first.planning.cached, 0);
  ASSERT_TRUE(std::filesystem::exists(path));

  const Run second = plan("build 1");
  EXPECT_EQ(second.timings, 0);
  EXPECT_EQ(second.planning.timed, 0);
  EXPECT_EQ(second.planning.cached, first.planning.timed);
  EXPECT_EQ(second.plans, first.plans) << "the cached choices are the timed ones";

  const Run rebuilt = plan("build 2");
  EXPECT_EQ(rebuilt.timings, first.timings) << "another build's timings do not count";

  // The file now holds build 2's choices for this CPU; under another hardware name they are
  // not found.
  const std::string hardware = first.plans.at("cpu").at("device");
  TimingCache reread(path, "build 2");
  int found = 0;
  const nlohmann::json file = nlohmann::json::parse(read_file(path, 1 << 20));  // items() needs a named object
  for (const auto& [problem, variant] : file.at("entries").at(hardware).items()) {
    EXPECT_EQ(reread.find(hardware, problem), variant.get<std::string>());
    EXPECT_FALSE(reread.find(hardware + " (another)", problem).has_value());
    ++found;
  }
  EXPECT_EQ(found, first.planning.timed);

  for (const std::string damaged : {"{\"build\": \"build 2\", \"entries\": {\"x\": 3}}", "{\"build\"", "[]"}) {
    std::ofstream(path, std::ios::trunc) << damaged;
    EXPECT_EQ(plan("build 2").timings, first.timings) << damaged;
    EXPECT_EQ(plan("build 2").timings, 0) << "the file is written anew after " << damaged;
  }
  std::filesystem::remove(path);
}

TEST(CpuPlans, TheUserTimingCacheLivesWhereTheEnvironmentSays) {
  EXPECT_EQ(TimingCache::user_path("/tmp/t.json", "/x", "/h"), "/tmp/t.json");
  EXPECT_EQ(TimingCache::user_path("off", "/x", "/h"), "");
  EXPECT_EQ(TimingCache::user_path("", "/x", "/h"), "");
  EXPECT_EQ(TimingCache::user_path(nullptr, "/x", "/h"), "/x/kiln/timing-cache.json");
  EXPECT_EQ(TimingCache::user_path(nullptr, "", "/h"), "/h/.cache/kiln/timing-cache.json");
  EXPECT_EQ(TimingCache::user_path(nullptr, nullptr, nullptr), "");
  EXPECT_FALSE(TimingCache::this_build().empty());
  EXPECT_NE(TimingCache::this_build().find(KILN_VERSION), std::string::npos);
}

}  // namespace
}  // namespace kiln
