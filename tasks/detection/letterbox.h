// Ultralytics' LetterBox, as its predictor uses it: scale the image to fit imgsz keeping the
// aspect (Python's round() on the new size), resize like cv2.resize(INTER_LINEAR), then pad with
// gray borders split around the centre (round(d - 0.1) before, round(d + 0.1) after) either to a
// multiple of the stride (auto, the predictor's default: not a square) or to imgsz x imgsz
// (square, so that images of any shape batch together). And the way back: scale_boxes' gain and
// padding recomputed from the two shapes, boxes clamped to the image.
#pragma once

#include <vector>

#include "tasks/image/image.h"

namespace kiln::detection {

struct LetterboxConfig {
  int imgsz = 640;
  int stride = 32;
  int pad_value = 114;
  bool square = false;  // pad to imgsz x imgsz instead of to a multiple of the stride
};

// The padded image's size for a width x height image.
struct LetterboxShape {
  int new_width = 0, new_height = 0;  // the scaled image inside
  int left = 0, top = 0, width = 0, height = 0;
};
LetterboxShape letterbox_shape(int width, int height, const LetterboxConfig& c);
Image letterbox(const Image& image, const LetterboxConfig& c);

// x1 y1 x2 y2 in the letterboxed input -> pixels of the original image, clamped to it.
void scale_boxes_back(float* xyxy, int count, int input_width, int input_height, int width, int height);

}  // namespace kiln::detection
