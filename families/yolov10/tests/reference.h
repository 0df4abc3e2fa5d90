// The Ultralytics reference the yolov10 tests share (data/random_reference.json, written by
// scripts/device/yolov10_reference.py): the state dicts' names and shapes, and per image the
// predictor's 300 raw detections.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <vector>

#include "families/yolov10/tests/match.h"
#include "tests/test_support.h"

namespace kiln::test {

inline const nlohmann::json& random_reference() {
  static const nlohmann::json j = [] {
    std::ifstream in(source_dir() + "/families/yolov10/tests/data/random_reference.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

// One image's reference detections (boxes, scores, classes), best first.
inline std::vector<RawDetection> reference_detections(const nlohmann::json& image) {
  std::vector<RawDetection> out;
  const auto& scores = image.at("scores");
  for (size_t i = 0; i < scores.size(); ++i) {
    const auto& b = image.at("boxes")[i];
    out.push_back({{b[0].get<float>(), b[1].get<float>(), b[2].get<float>(), b[3].get<float>()},
                   scores[i].get<float>(),
                   image.at("classes")[i].get<int>()});
  }
  return out;
}

}  // namespace kiln::test
