// Evaluation of a detector bundle on a YOLO-format folder (images/ and labels/<stem>.txt with
// "class cx cy w h" normalised per line, as Ultralytics datasets are laid out): COCO mAP50-95 and
// mAP50 of its detections (coco_map.h), and throughput.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tasks/detection/coco_map.h"

namespace kiln::detection {

struct LabeledImages {
  std::vector<std::string> images;
  std::vector<std::vector<Box>> truth;  // pixels; filled when the images are read
};

// The images of FOLDER/images (JPEG, PNG, WebP; sorted by name) and their label files' paths.
std::vector<std::string> yolo_images(const std::string& folder);
// The boxes of one label file for a width x height image; a missing file means no objects.
std::vector<Box> read_yolo_labels(const std::string& path, int width, int height, int num_classes);

struct DetectionEvalOptions {
  std::string data;
  size_t limit = 0;
  std::string device = "auto";
  float conf = 0.001f;  // Ultralytics' val default
  int max_det = 300;
  int imgsz = 0;
  // Images per call: a call batches the images that letterbox to one shape (all of them with
  // `square`, which pads every image to imgsz x imgsz as a batching deployment would).
  int batch = 1;
  bool square = false;
  bool progress = true;
};

struct DetectionEvalReport {
  size_t images = 0;
  MapResult map;
  double seconds = 0, images_per_s = 0;
  // Per image: decoding, letterboxing (with the input tensors), the engine, the way back.
  double decode_ms = 0, preprocess_ms = 0, inference_ms = 0, postprocess_ms = 0;
  std::string device, data;
  nlohmann::json to_json() const;
};

DetectionEvalReport evaluate_detection(const std::string& bundle, const DetectionEvalOptions& options);

}  // namespace kiln::detection
