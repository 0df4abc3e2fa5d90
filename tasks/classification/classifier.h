// Image classification on a loaded bundle: preprocessing from the bundle, the engine, softmax
// and top-k with the bundle's labels. The bundle's graph takes "pixels" [batch, 3, H, W] (NCHW,
// normalised) and gives "logits" [batch, classes].
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "tasks/classification/preprocess.h"
#include "tasks/image/image.h"

namespace kiln::classification {

struct Scored {
  int index;
  float probability;
};

// Softmax in double over one row of logits, rounded to float.
std::vector<float> softmax(const float* logits, int classes);
// The k most probable classes of one row of logits, best first, with their softmax.
std::vector<Scored> top_k(const float* logits, int classes, int k);

class ImageClassifier {
 public:
  // device: "cpu", "cuda" or "auto" (the GPU when there is one).
  ImageClassifier(std::shared_ptr<const Bundle> bundle, const std::string& device = "auto");

  const PreprocessConfig& preprocess_config() const { return pre_; }
  const std::vector<std::string>& labels() const { return labels_; }
  int num_classes() const { return static_cast<int>(labels_.size()); }
  const Bundle& bundle() const { return *bundle_; }
  Engine& engine() { return *engine_; }
  // The engine's sizes for a batch ({"batch": n}).
  Bindings bindings(int batch) const;

  // input: batch x C x H x W; logits: batch x classes.
  void run(const float* input, int batch, float* logits);
  // run() without its copy: input_for(batch) is the buffer the engine reads (batch x C x H x W
  // floats, valid until the next call), to be filled in place, then run_input(batch, logits).
  float* input_for(int batch);
  void run_input(int batch, float* logits);
  // Preprocesses and runs a batch of images.
  std::vector<float> classify(const std::vector<const Image*>& images);

 private:
  std::shared_ptr<const Bundle> bundle_;
  PreprocessConfig pre_;
  std::vector<std::string> labels_;
  std::unique_ptr<Engine> engine_;
  std::string batch_symbol_;
  std::vector<HostTensor> input_{HostTensor{"pixels", DType::F32, {}, {}}};  // run()'s, reused
};

}  // namespace kiln::classification
