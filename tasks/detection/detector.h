// Object detection on a loaded bundle: letterboxing from the bundle's settings, the anchor grid
// of the input size, the engine, and the head's top-k detections mapped back to each image. The
// bundle's graph takes "pixels" [batch, 3, height, width] (RGB in [0, 1]) and "anchors"
// [anchors, 3] (cell centre x, y and stride per grid cell, level by level) and gives "boxes"
// [batch, K, 4] (x1 y1 x2 y2, input pixels), "scores" [batch, K] and "classes" [batch, K], best
// first: no NMS, the head already picked one box per object.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "tasks/detection/letterbox.h"
#include "tasks/image/image.h"

namespace kiln::detection {

struct Detection {
  float x1, y1, x2, y2;  // pixels of the original image
  float score;
  int class_id;
};

struct DetectOptions {
  float conf = 0.25f;   // keep scores above this (Ultralytics' predictor: >, not >=)
  int max_det = 300;    // at most this many per image (the head gives the bundle's max_det)
  int imgsz = 0;        // 0: the bundle's
  bool square = false;  // letterbox every image to imgsz x imgsz (lets a batch mix image shapes)
};

// Where a detector's time went, summed over its calls: letterboxing and the input tensors, the
// engine, and mapping the head's output back to the images.
struct StageSeconds {
  double preprocess = 0, inference = 0, postprocess = 0;
};

// The anchors input for an input of width x height: (x + 0.5, y + 0.5, stride) per cell.
std::vector<float> anchor_grid(int width, int height, const std::vector<int>& strides);

class Detector {
 public:
  // device: "cpu", "cuda" or "auto" (the GPU when there is one).
  Detector(std::shared_ptr<const Bundle> bundle, const std::string& device = "auto");

  const std::vector<std::string>& labels() const { return labels_; }
  const LetterboxConfig& letterbox_config() const { return letterbox_; }
  int max_det() const { return max_det_; }
  Engine& engine() { return *engine_; }
  const Bundle& bundle() const { return *bundle_; }

  // Detections of each image, best first. Images whose letterboxed shapes agree run as one batch
  // (all of them with options.square).
  std::vector<std::vector<Detection>> detect(const std::vector<const Image*>& images, const DetectOptions& options);

  // The raw head of one batch of letterboxed images of one shape: boxes in input pixels.
  struct Raw {
    std::vector<float> boxes, scores;  // [batch, K, 4], [batch, K]
    std::vector<int64_t> classes;      // [batch, K]
    int k = 0;
  };
  Raw run(const std::vector<const Image*>& letterboxed);

  const StageSeconds& stage_seconds() const { return seconds_; }

 private:
  std::shared_ptr<const Bundle> bundle_;
  LetterboxConfig letterbox_;
  std::vector<int> strides_;
  std::vector<std::string> labels_;
  int max_det_ = 0;
  std::unique_ptr<Engine> engine_;
  StageSeconds seconds_;
  std::vector<HostTensor> inputs_{HostTensor{"pixels", DType::F32, {}, {}}, HostTensor{}};  // run()'s, reused
};

}  // namespace kiln::detection
