// kiln's fp32 CPU engine (the reference kernels and the fast ones) against timm's own outputs
// (../shared/reference, made with timm 1.0.29 in fp32 with TF32 off): logits on real and stress
// inputs, and the intermediate stage outputs; and the fast kernels against the reference ones.
#include <gtest/gtest.h>

#include "backends/engine.h"
#include "checkpoints/safetensors.h"
#include "graph/family_registry.h"
#include "tests/test_graphs.h"
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
  for (const char* device : {"cpu-reference", "cpu"}) {
    Engine engine(def.graph(), def.constants(), EngineOptions{device});
    for (const auto& [input_name, logits_name] :
         {std::pair{"inputs", std::string(GetParam().arch) + ".logits"},
          std::pair{"stress_inputs", std::string(GetParam().arch) + ".stress_logits"}}) {
      Tensor input = ref.to_float(input_name);
      Tensor expect = ref.to_float(logits_name);
      int batch = static_cast<int>(input.dim(0));
      const std::vector<float> logits = test::logits(engine, input);
      double diff = test::max_abs_diff(logits.data(), expect.data.data(), logits.size());
      EXPECT_LT(diff, 2e-3) << device << " " << input_name;
      for (int n = 0; n < batch; ++n)
        EXPECT_EQ(test::top_indices(logits.data() + n * 1000, 1000, 5),
                  test::top_indices(expect.data.data() + n * 1000, 1000, 5))
            << device << " " << input_name << " sample " << n;
      std::printf("[parity] %s on %s, %s: max |logit diff| %.3g\n", GetParam().arch, device, input_name, diff);
    }
  }
}

// The fast CPU kernels (oneDNN, the fusions) compute what the reference kernels compute: the
// same logits within 1e-4 (summation order differs), the same top-5; with each of oneDNN's
// implementations of the large convs that a build may choose (test::ForcedVariants).
TEST_P(LogitParity, FastKernelsMatchTheReferenceKernels) {
  SafetensorsFile ref(test::data_path(kReference));
  ModelDefinition def = define(GetParam().checkpoint);
  Engine reference(def.graph(), def.constants(), EngineOptions{"cpu-reference"});
  for (const char* input_name : {"inputs", "stress_inputs"}) {
    Tensor input = ref.to_float(input_name);
    const std::vector<float> want = test::logits(reference, input);
    const Bindings sizes = {{"batch", input.dim(0)}};
    const test::ForcedVariants forced(def, sizes, "cpu");
    int others = 0;  // nodes that ran an implementation other than oneDNN's pick
    for (const std::string& variant : test::kCpuConvVariantNames) {
      auto fast = forced.forced(variant);
      const std::vector<float> got = test::logits(*fast, input);
      const int taken = test::ForcedVariants::taken(*fast, sizes, variant, "cpu");
      if (variant != "onednn") others += taken;
      if (taken == 0) continue;  // this CPU has no such implementation for these convs
      ASSERT_EQ(want.size(), got.size());
      const double diff = test::max_abs_diff(got.data(), want.data(), got.size());
      EXPECT_LT(diff, 1e-4) << input_name << " " << variant;
      for (size_t n = 0; n < got.size() / 1000; ++n)
        EXPECT_EQ(test::top_indices(got.data() + n * 1000, 1000, 5), test::top_indices(want.data() + n * 1000, 1000, 5))
            << input_name << " " << variant << " sample " << n;
      std::printf("[fast vs reference] %s %s, %s on %d convs: max |logit diff| %.3g\n", GetParam().arch, input_name,
                  variant.c_str(), taken, diff);
    }
    EXPECT_GE(others, 3) << input_name;
  }
}

INSTANTIATE_TEST_SUITE_P(SharedCheckpoints, LogitParity,
                         ::testing::Values(Case{"efficientnet_b0.tfhub-transplant", "efficientnet_b0"},
                                           Case{"tf_efficientnet_b0.tfhub", "tf_efficientnet_b0"}));

TEST(StageParity, EfficientNetB0StagesMatchTimm) {
  SafetensorsFile ref(test::data_path(kReference));
  ModelDefinition def = define("efficientnet_b0.tfhub-transplant");
  Engine engine(def.graph(), def.constants(), EngineOptions{"cpu-reference"});
  Tensor all = ref.to_float("inputs"), first({1, 3, 224, 224});
  std::copy(all.data.begin(), all.data.begin() + first.numel(), first.data.begin());
  std::vector<std::string> taps = {"stem_out", "head_out"};
  for (int s = 0; s < 7; ++s) taps.push_back("blocks." + std::to_string(s));
  const auto out = test::run_pixels(engine, first, taps);
  for (size_t t = 0; t < taps.size(); ++t) {
    // kiln's maps are NHWC, timm's NCHW.
    const HostTensor& nhwc = out[t + 1];
    Tensor expect = ref.to_float("efficientnet_b0.image0." + taps[t]);
    ASSERT_EQ(nhwc.shape.size(), 4u) << taps[t];
    const int64_t h = nhwc.shape[1], w = nhwc.shape[2], c = nhwc.shape[3];
    ASSERT_EQ(expect.shape, (std::vector<int64_t>{1, c, h, w})) << taps[t];
    const std::vector<float> y = nhwc.to_f32();
    std::vector<float> nchw(y.size());
    for (int64_t p = 0; p < h * w; ++p)
      for (int64_t k = 0; k < c; ++k) nchw[k * h * w + p] = y[p * c + k];
    const double err = test::rel_l2(nchw.data(), expect.data.data(), expect.data.size());
    EXPECT_LT(err, 1e-5) << taps[t];
  }
}

}  // namespace
}  // namespace kiln
