// Evaluation of a classifier bundle over a labelled image source: accuracy, agreement with a
// reference engine (the CPU fp32 path by default), logit differences and throughput. Decoding and
// preprocessing run on several threads, a batch ahead of inference.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace kiln::classification {

struct EvalOptions {
  std::string data;  // see datasets/image_dataset.h
  size_t limit = 0;  // 0: every image
  // "": none; "cpu" / "cpu-reference": this bundle on the CPU (fast or reference kernels); a
  // .bundle: that bundle on the CPU; a .safetensors:
  // logits saved by an earlier run (--save-logits), in the same image order.
  std::string reference;
  std::string save_logits;  // write this run's logits (and labels) as safetensors
  std::string device = "auto";
  int batch = 32;
  bool progress = true;
};

struct EvalReport {
  size_t images = 0, labelled = 0, nonfinite = 0;
  double top1 = 0, top5 = 0;  // percent of labelled images
  bool has_reference = false;
  double agreement = 0;  // percent of images whose top-1 matches the reference's
  double max_abs_logit_diff = 0, mean_abs_logit_diff = 0;
  double reference_top1 = 0;  // the reference's own top-1, percent
  double images_per_s = 0, seconds = 0;
  std::string device, data;
  nlohmann::json to_json() const;
};

EvalReport evaluate(const std::string& bundle, const EvalOptions& options);

}  // namespace kiln::classification
