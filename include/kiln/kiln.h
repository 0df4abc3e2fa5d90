// kiln's public C++ API: build a bundle from a checkpoint, load it, classify images.
//
//   std::unique_ptr<kiln::Classifier> model;
//   kiln::Status s = kiln::Classifier::load("model.bundle", &model);
//   std::vector<kiln::Classification> out;
//   s = model->classify_files({"cat.jpg"}, 5, &out);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln {

struct BuildOptions {
  std::string revision;            // Hub revision (branch, tag or commit); empty: main
  std::string precision = "fp32";  // fp32, fp16 (weights in half precision) or fp8 (needs calibration)
  std::vector<int> batch_sizes = {1};
  std::string labels_file;  // optional: class names (JSON list/object or one per line)
  // fp8: the recipe (a name the family ships, or a .json file; empty: the family's default),
  // the calibration images, how many, and optionally a calibration method overriding the recipe's.
  std::string recipe, calib, calib_method;
  size_t calib_samples = 500;
};

struct BuildResult {
  std::string architecture, family, model_id, revision, checkpoint_dir;
  uint64_t bundle_bytes = 0;
  double seconds = 0;
  std::string planned_on;  // the GPU whose timings chose the kernels ("" without a GPU)
  double planning_seconds = 0;
  std::string recipe;  // fp8: the recipe used
  int fp8_layers = 0;  // fp8: how many layers it put in FP8
  double calibration_seconds = 0;
};

// SOURCE: a local folder (Hugging Face layout, or a format a family imports), or a Hub id
// ("org/model-name") found in the Hugging Face cache or downloaded into it.
Status build(const std::string& source, const std::string& output_path, const BuildOptions& options,
             BuildResult* result);

struct Prediction {
  int index = 0;
  std::string label;
  float probability = 0;
};

struct Classification {
  std::vector<Prediction> top;  // best first
  std::vector<float> logits;    // every class
};

struct ModelInfo {
  std::string model_id, revision, family, architecture, precision, kiln_version, created;
  int channels = 0, height = 0, width = 0, num_classes = 0;
  std::vector<int> batch_sizes;
  uint64_t bundle_bytes = 0;
  std::string device;  // where it runs: "cpu", "cuda:0 (NVIDIA H200)"
};

// A decoded 8-bit RGB image (row-major, 3 bytes a pixel), owned by the caller.
struct ImageView {
  int width = 0, height = 0;
  const uint8_t* rgb = nullptr;
};

class Classifier {
 public:
  // device: "cpu", "cuda", or "auto" (the GPU when there is one).
  static Status load(const std::string& bundle_path, std::unique_ptr<Classifier>* out,
                     const std::string& device = "auto");
  ~Classifier();

  const ModelInfo& info() const;
  // Decodes (JPEG, PNG, WebP), preprocesses as the bundle says and classifies.
  Status classify_files(const std::vector<std::string>& paths, int top_k, std::vector<Classification>* out);
  Status classify_images(const std::vector<ImageView>& images, int top_k, std::vector<Classification>* out);
  // Runs already-preprocessed input: batch x C x H x W floats (NCHW). Writes batch x classes logits.
  Status run(const float* input, int batch, std::vector<float>* logits);

 private:
  Classifier();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
