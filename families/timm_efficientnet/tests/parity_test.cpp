// kiln's fp32 CPU engine against timm's own outputs (../shared/reference, made with timm 1.0.29
// in fp32 with TF32 off): logits on real and stress inputs, and the intermediate stage outputs.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_engine.h"
#include "checkpoints/safetensors.h"
#include "graph/family_registry.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

const char* kReference = "reference/efficientnet_b0_timm_reference.safetensors";

ModelDefinition define(const std::string& checkpoint) {
  Checkpoint ckpt(test::data_path("checkpoints/" + checkpoint));
  const Family* family = FamilyRegistry::instance().find_family(ckpt.config()["architecture"]);
  EXPECT_NE(family, nullptr);
  return family->build(ckpt);
}

struct Case {
  const char* checkpoint;
  const char* arch;
};

class LogitParity : public ::testing::TestWithParam<Case> {};

TEST_P(LogitParity, MatchesTimmOnImagesAndStressInputs) {
  SafetensorsFile ref(test::data_path(kReference));
  ModelDefinition def = define(GetParam().checkpoint);
  CpuEngine engine(def.graph, def.weight_lookup());
  for (const auto& [input_name, logits_name] :
       {std::pair{"inputs", std::string(GetParam().arch) + ".logits"},
        std::pair{"stress_inputs", std::string(GetParam().arch) + ".stress_logits"}}) {
    Tensor input = ref.to_float(input_name);
    Tensor expect = ref.to_float(logits_name);
    int batch = static_cast<int>(input.dim(0));
    std::vector<float> logits(static_cast<size_t>(batch) * 1000);
    engine.run(input.data.data(), batch, 224, 224, logits.data());
    double diff = test::max_abs_diff(logits.data(), expect.data.data(), logits.size());
    EXPECT_LT(diff, 2e-3) << input_name;
    for (int n = 0; n < batch; ++n)
      EXPECT_EQ(test::top_indices(logits.data() + n * 1000, 1000, 5),
                test::top_indices(expect.data.data() + n * 1000, 1000, 5))
          << input_name << " sample " << n;
    std::printf("[parity] %s %s: max |logit diff| %.3g\n", GetParam().arch, input_name, diff);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedCheckpoints, LogitParity,
                         ::testing::Values(Case{"efficientnet_b0.tfhub-transplant", "efficientnet_b0"},
                                           Case{"tf_efficientnet_b0.tfhub", "tf_efficientnet_b0"}));

TEST(StageParity, EfficientNetB0StagesMatchTimm) {
  SafetensorsFile ref(test::data_path(kReference));
  ModelDefinition def = define("efficientnet_b0.tfhub-transplant");
  CpuEngine engine(def.graph, def.weight_lookup());
  Tensor input = ref.to_float("inputs");
  std::vector<std::string> taps = {"stem_out", "head_out"};
  for (int s = 0; s < 7; ++s) taps.push_back("blocks." + std::to_string(s));
  std::vector<float> logits(1000);
  auto out = engine.run_with_taps(input.data.data(), 1, 224, 224, logits.data(), taps);
  for (const auto& tap : taps) {
    Tensor expect = ref.to_float("efficientnet_b0.image0." + tap);
    ASSERT_EQ(out[tap].shape, expect.shape) << tap;
    double err = test::rel_l2(out[tap].data.data(), expect.data.data(), expect.data.size());
    EXPECT_LT(err, 1e-5) << tap;
  }
}

}  // namespace
}  // namespace kiln
