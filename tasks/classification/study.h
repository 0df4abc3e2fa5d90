// `kiln study`: one command for a precision / quantisation study of a classifier checkpoint.
// For each recipe it builds a bundle, times it at every batch size, evaluates it on held-out
// images against the fp32 CPU reference, runs generated stress images, and (on a GPU) reports
// kernel time per layer group; then writes study.md and study.json.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kiln::classification {

struct StudyOptions {
  std::string source;                // checkpoint folder or Hub id
  std::vector<std::string> recipes;  // "fp32", "fp16", FP8 recipe names or .json files
  std::string data, calib;           // held-out images; calibration images (fp8 recipes)
  size_t calib_samples = 500, limit = 0;
  std::vector<int> batches = {1, 32, 128};
  std::string device = "auto";
  std::string out_dir;
  int iters = 50;
};

nlohmann::json run_study(const StudyOptions& options);

}  // namespace kiln::classification
