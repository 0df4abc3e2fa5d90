// kiln's yolov10 on the CPU (fp32) against Ultralytics' predictor (THU-MIG/yolov10, fp32, CPU),
// from tests/data/random_reference.json (scripts/device/yolov10_reference.py): all six sizes with
// deterministic weights, val2017 images letterboxed at 320 (and at 640 for yolov10n and
// yolov10s). Checked: the
// letterboxed pixels (SHA-256 of Ultralytics' own), and all 300 raw detections (conf 0, before
// any threshold) in original-image pixels: same classes, scores within 1e-4, boxes within 0.01 px
// (tied scores may come in another order: match.h).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/sha256.h"
#include "families/yolov10/tests/deterministic_checkpoint.h"
#include "families/yolov10/tests/reference.h"
#include "kiln/kiln.h"
#include "tasks/detection/letterbox.h"
#include "tasks/image/image.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

std::string image_path(const std::string& name) { return test::data_path("data/coco-val2017-128/images/" + name); }

// Builds an fp32 bundle of the deterministic checkpoint once per architecture.
std::string bundle_for(const std::string& arch) {
  const std::string dir = test::binary_dir() + "/yolov10-test/" + arch;
  const std::string bundle = dir + ".bundle";
  if (std::filesystem::exists(bundle)) return bundle;
  test::write_deterministic_checkpoint(dir, arch, test::random_reference().at("models").at(arch));
  BuildResult r;
  const Status s = build(dir, bundle, BuildOptions{}, &r);
  EXPECT_TRUE(s.ok()) << s.message();
  return bundle;
}

TEST(YoloLetterbox, MatchesUltralyticsPixelForPixel) {
  int checked = 0;
  for (const auto& [arch, entry] : test::random_reference().at("models").items())
    for (const auto& run : entry.at("runs"))
      for (const auto& ref : run.at("images")) {
        const Image image = load_image(image_path(ref.at("image")), /*exif_orientation=*/true);
        ASSERT_EQ(image.height, ref.at("size")[0].get<int>());
        ASSERT_EQ(image.width, ref.at("size")[1].get<int>());
        detection::LetterboxConfig c;
        c.imgsz = run.at("imgsz").get<int>();
        const Image lb = detection::letterbox(image, c);
        EXPECT_EQ(lb.height, ref.at("letterboxed")[0].get<int>());
        EXPECT_EQ(lb.width, ref.at("letterboxed")[1].get<int>());
        EXPECT_EQ(sha256_hex(lb.rgb), ref.at("sha256").get<std::string>())
            << ref.at("image") << " at " << c.imgsz << " (" << image.width << "x" << image.height << ")";
        ++checked;
      }
  EXPECT_GE(checked, 8);
}

class RawParity : public ::testing::TestWithParam<std::string> {};

TEST_P(RawParity, MatchesUltralyticsBeforeTheThreshold) {
  const std::string arch = GetParam();
  std::unique_ptr<Detector> model;
  ASSERT_TRUE(Detector::load(bundle_for(arch), &model, "cpu").ok());
  for (const auto& run : test::random_reference().at("models").at(arch).at("runs")) {
    DetectionOptions o;
    o.conf = 0;
    o.imgsz = run.at("imgsz").get<int>();
    for (const auto& ref : run.at("images")) {
      std::vector<std::vector<DetectedObject>> out;
      const Status d = model->detect_files({image_path(ref.at("image"))}, o, &out);
      ASSERT_TRUE(d.ok()) << d.message();
      const auto want = test::reference_detections(ref);
      std::vector<test::RawDetection> got;
      for (const auto& d : out.at(0)) got.push_back({{d.x1, d.y1, d.x2, d.y2}, d.score, d.class_id});
      ASSERT_EQ(got.size(), want.size()) << ref.at("image");
      const auto m = test::match_detections(want, got, 1e-4, 0.01);
      EXPECT_EQ(m.unmatched, 0) << ref.at("image") << " at " << o.imgsz;
      std::printf("[parity] %s %s at %d: max |score diff| %.2g, max |box diff| %.2g px, %d of 300 at another rank\n",
                  arch.c_str(), ref.at("image").get<std::string>().c_str(), o.imgsz, m.max_score_diff, m.max_box_diff,
                  m.moved);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DeterministicWeights, RawParity,
                         ::testing::Values("yolov10n", "yolov10s", "yolov10m", "yolov10b", "yolov10l", "yolov10x"));

}  // namespace
}  // namespace kiln
