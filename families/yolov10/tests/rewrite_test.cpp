// The yolov10 graph through the rewrites and precision lowering the CUDA backend applies, run on
// the CPU (tests/fusing_backend.h), against the plain CPU engine: a deterministic yolov10n on a
// letterboxed val2017 image. CI checks here what the GPU runs, without a GPU.
#include <gtest/gtest.h>

#include <fstream>

#include "families/yolov10/tests/deterministic_checkpoint.h"
#include "families/yolov10/tests/reference.h"
#include "graph/family_registry.h"
#include "tasks/detection/detector.h"
#include "tasks/detection/letterbox.h"
#include "tests/fusing_backend.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

std::vector<test::RawDetection> run(Engine& e, const Image& lb) {
  const int64_t plane = static_cast<int64_t>(lb.width) * lb.height;
  HostTensor pixels = HostTensor::zeros("pixels", DType::F32, {1, 3, lb.height, lb.width});
  float* p = pixels.as<float>();
  for (int64_t i = 0; i < plane; ++i)
    for (int c = 0; c < 3; ++c) p[c * plane + i] = lb.rgb[3 * i + c] / 255.0f;
  const auto grid = detection::anchor_grid(lb.width, lb.height, {8, 16, 32});
  const auto out = e.run({pixels, HostTensor::from_f32("anchors", {static_cast<int64_t>(grid.size() / 3), 3}, grid)});
  const Graph& g = e.graph();
  const auto boxes = out.at(*g.find_output("boxes")).to_f32(), scores = out.at(*g.find_output("scores")).to_f32();
  const HostTensor& classes = out.at(*g.find_output("classes"));
  std::vector<test::RawDetection> dets;
  for (size_t i = 0; i < scores.size(); ++i)
    dets.push_back({{boxes[4 * i], boxes[4 * i + 1], boxes[4 * i + 2], boxes[4 * i + 3]},
                    scores[i],
                    static_cast<int>(classes.as<int64_t>()[i])});
  return dets;
}

TEST(YoloRewrites, FusedAndHalfPrecisionGraphsComputeTheSame) {
  const std::string dir = test::binary_dir() + "/yolov10-rewrite/yolov10n";
  test::write_deterministic_checkpoint(dir, "yolov10n", test::random_reference().at("models").at("yolov10n"));
  Checkpoint ckpt(dir);
  const ModelDefinition def = FamilyRegistry::instance().find_family("yolov10n")->build(ckpt);
  const Image lb =
      detection::letterbox(load_image(test::data_path("data/coco-val2017-128/images/000000000139.jpg")), {320});
  Engine cpu(def.graph(), def.constants(), EngineOptions{"cpu"});
  const auto want = run(cpu, lb);
  ASSERT_EQ(want.size(), 300u);

  const auto fused = run(*test::fusing_engine(def, false), lb);
  const auto m = test::match_detections(want, fused, 1e-5, 1e-3);
  EXPECT_EQ(m.unmatched, 0);
  std::printf("[rewrites] fp32: max |score diff| %.2g, max |box diff| %.2g px\n", m.max_score_diff, m.max_box_diff);

  // fp16: the scores of random weights lie within 1e-3 of each other, below fp16's resolution
  // of the logits, so the ranks shuffle; the sorted scores must still agree.
  const auto half = run(*test::fusing_engine(def, true), lb);
  ASSERT_EQ(half.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(half[i].score) - want[i].score));
  EXPECT_LT(worst, 5e-3);
  std::printf("[rewrites] fp16: max |sorted score diff| %.2g\n", worst);
}

}  // namespace
}  // namespace kiln
