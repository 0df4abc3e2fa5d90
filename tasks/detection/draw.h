// Detections drawn into an image: a 2-pixel rectangle per box in a colour per class (no text:
// `kiln detect --json` gives the labels), so that a person can look instead of read.
#pragma once

#include <vector>

#include "tasks/detection/detector.h"
#include "tasks/image/image.h"

namespace kiln::detection {

void draw_detections(Image& image, const std::vector<Detection>& detections);

}  // namespace kiln::detection
