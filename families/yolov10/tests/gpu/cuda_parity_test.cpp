// yolov10 on the GPU against Ultralytics (tests/data/random_reference.json, as parity_test.cpp on
// the CPU): an fp32 bundle computes in fp32 on the GPU and must meet the CPU's tolerances (scores
// within 1e-4, boxes within 0.01 px); an fp16 bundle's sorted scores must stay within 5e-3 (the
// random weights' 300 best scores lie closer together than fp16 resolves, so ranks shuffle).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "families/yolov10/tests/deterministic_checkpoint.h"
#include "families/yolov10/tests/reference.h"
#include "kiln/kiln.h"
#include "tests/test_graphs.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

std::string bundle_for(const std::string& arch, const std::string& precision) {
  const std::string dir = test::binary_dir() + "/yolov10-gpu-test/" + arch;
  const std::string bundle = dir + "-" + precision + ".bundle";
  if (!std::filesystem::exists(dir + "/model.safetensors"))
    test::write_deterministic_checkpoint(dir, arch, test::random_reference().at("models").at(arch));
  BuildOptions o;
  o.precision = precision;
  const Status s = build(dir, bundle, o, nullptr);
  EXPECT_TRUE(s.ok()) << s.message();
  return bundle;
}

class CudaParity : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaParity, Fp32AndFp16MatchUltralytics) {
  REQUIRE_GPU();
  const std::string arch = GetParam();
  for (const std::string precision : {"fp32", "fp16"}) {
    std::unique_ptr<Detector> model;
    const Status s = Detector::load(bundle_for(arch, precision), &model, "cuda");
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_NE(model->info().device.find("cuda"), std::string::npos);
    for (const auto& run : test::random_reference().at("models").at(arch).at("runs")) {
      DetectionOptions o;
      o.conf = 0;
      o.imgsz = run.at("imgsz").get<int>();
      for (const auto& ref : run.at("images")) {
        std::vector<std::vector<DetectedObject>> out;
        const std::string path = test::data_path("data/coco-val2017-128/images/" + ref.at("image").get<std::string>());
        const Status d = model->detect_files({path}, o, &out);
        ASSERT_TRUE(d.ok()) << precision << ": " << d.message();
        const auto want = test::reference_detections(ref);
        std::vector<test::RawDetection> got;
        for (const auto& d : out.at(0)) got.push_back({{d.x1, d.y1, d.x2, d.y2}, d.score, d.class_id});
        ASSERT_EQ(got.size(), want.size());
        if (precision == "fp32") {
          const auto m = test::match_detections(want, got, 1e-4, 0.01);
          EXPECT_EQ(m.unmatched, 0) << ref.at("image") << " at " << o.imgsz;
          std::printf("[cuda fp32] %s %s at %d: max |score diff| %.2g, max |box diff| %.2g px\n", arch.c_str(),
                      ref.at("image").get<std::string>().c_str(), o.imgsz, m.max_score_diff, m.max_box_diff);
        } else {
          double worst = 0;
          for (size_t i = 0; i < want.size(); ++i)
            worst = std::max(worst, std::abs(double(got[i].score) - want[i].score));
          EXPECT_LT(worst, 5e-3) << ref.at("image") << " at " << o.imgsz;
          std::printf("[cuda fp16] %s %s at %d: max |sorted score diff| %.2g\n", arch.c_str(),
                      ref.at("image").get<std::string>().c_str(), o.imgsz, worst);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DeterministicWeights, CudaParity,
                         ::testing::Values("yolov10n", "yolov10s", "yolov10m", "yolov10b", "yolov10l", "yolov10x"));

}  // namespace
}  // namespace kiln
