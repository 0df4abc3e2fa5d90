// FP8 bundles of the detector: the family's recipes built through the public API, calibrated on
// COCO train2017 images as `kiln detect` letterboxes them, then run on val2017 images against the
// fp32 bundle (the CPU's FP8 kernels emulate the GPU's E4M3 arithmetic exactly). The weights are
// the deterministic random ones of the parity test, so the comparison is of the raw top 300
// (conf 0), not of trained detections; the FP8 study in the family README has the rest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "families/yolov10/tests/deterministic_checkpoint.h"
#include "families/yolov10/tests/reference.h"
#include "kiln/kiln.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

std::string work() {
  static const std::string dir = test::process_dir("yolov10-fp8-test");
  return dir;
}

std::string checkpoint() {
  const std::string dir = work() + "/yolov10n";
  if (!std::filesystem::exists(dir + "/config.json"))
    test::write_deterministic_checkpoint(dir, "yolov10n", test::random_reference().at("models").at("yolov10n"));
  return dir;
}

std::string build_bundle(const std::string& precision, const std::string& recipe, BuildResult* r) {
  BuildOptions o;
  o.precision = precision;
  if (precision == "fp8") {
    o.recipe = recipe;
    o.calib = test::data_path("data/coco-train2017-128");
    o.calib_samples = 2;
  }
  const std::string path = work() + "/" + precision + recipe + ".bundle";
  const Status s = build(checkpoint(), path, o, r);
  EXPECT_TRUE(s.ok()) << s.message();
  return path;
}

// Each image's 300 raw scores, sorted.
std::vector<std::vector<float>> sorted_scores(const std::string& bundle, const std::vector<std::string>& images) {
  std::unique_ptr<Detector> d;
  EXPECT_TRUE(Detector::load(bundle, &d, "cpu").ok());
  DetectionOptions o;
  o.conf = 0;
  std::vector<std::vector<DetectedObject>> out;
  const Status s = d->detect_files(images, o, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<std::vector<float>> scores;
  for (const auto& dets : out) {
    scores.emplace_back();
    for (const auto& x : dets) scores.back().push_back(x.score);
    std::sort(scores.back().rbegin(), scores.back().rend());
  }
  return scores;
}

// fp8-pointwise: yolov10n's 1x1 convs (41; the first conv and the 3x3 and depthwise ones stay),
// fp8-conv: every conv but the first (81). Raw scores move by at most 1.6e-3 and 1.9e-3
// (measured), and do move (the layers run in FP8).
TEST(YoloFp8, RecipesCalibratedOnTrainImagesStayCloseToFp32) {
  const std::vector<std::string> images = {test::data_path("data/coco-val2017-128/images/000000000139.jpg"),
                                           test::data_path("data/coco-val2017-128/images/000000000285.jpg")};
  BuildResult r32;
  const auto want = sorted_scores(build_bundle("fp32", "", &r32), images);
  for (const auto& [recipe, layers] :
       std::vector<std::pair<std::string, int>>{{"fp8-pointwise", 41}, {"fp8-conv", 81}}) {
    BuildResult r;
    const auto got = sorted_scores(build_bundle("fp8", recipe, &r), images);
    EXPECT_EQ(r.recipe, recipe);
    EXPECT_EQ(r.fp8_layers, layers) << recipe;
    ASSERT_EQ(got.size(), want.size());
    double max_diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].size(), 300u);
      ASSERT_EQ(want[i].size(), 300u);
      for (size_t k = 0; k < want[i].size(); ++k)
        max_diff = std::max(max_diff, std::fabs(double{got[i][k]} - want[i][k]));
    }
    EXPECT_LT(max_diff, 5e-3) << recipe;
    EXPECT_GT(max_diff, 1e-5) << recipe;
    std::printf("[fp8] %s: %d layers, max |sorted score diff| %.2g against fp32\n", recipe.c_str(), r.fp8_layers,
                max_diff);
  }
}

// Calibration data that is not a YOLO folder is named in a one-line error.
TEST(YoloFp8, CalibrationNeedsAnImagesFolder) {
  BuildOptions o;
  o.precision = "fp8";
  o.calib = test::data_path("data/text");
  BuildResult r;
  const Status s = build(checkpoint(), work() + "/bad.bundle", o, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("images/"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kiln
