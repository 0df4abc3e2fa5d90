// OpenCV's cv::resize(src, dst, size, 0, 0, INTER_LINEAR) of 8-bit images, pixel for pixel: the
// resize Ultralytics' LetterBox uses (and so the one YOLO models were trained and are checked
// with). Written out because the fixed-point rounding is what makes outputs equal, and pulling in
// OpenCV for one function would not be smaller: 11-bit coefficients rounded from single-precision
// weights, an exact integer horizontal pass, the vertical pass rounded as OpenCV's vectorised
// loop does (the scalar tail as its scalar code), and the exact 2x shrink done as INTER_AREA's
// rounded 2x2 mean, as cv::resize itself switches to.
#pragma once

#include "tasks/image/image.h"

namespace kiln {

Image resize_bilinear_cv(const Image& src, int width, int height);

}  // namespace kiln
