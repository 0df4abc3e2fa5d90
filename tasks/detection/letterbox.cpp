#include "tasks/detection/letterbox.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "tasks/image/resize_cv.h"

namespace kiln::detection {

namespace {

// Python's round(): to nearest, ties to even (the default rounding mode of nearbyint).
int py_round(double v) { return static_cast<int>(std::nearbyint(v)); }

}  // namespace

LetterboxShape letterbox_shape(int width, int height, const LetterboxConfig& c) {
  KILN_CHECK(width >= 1 && height >= 1, "[detect] empty image ({}x{})", width, height);
  KILN_CHECK(c.imgsz >= c.stride && c.stride >= 1 && c.imgsz % c.stride == 0 && c.imgsz <= 8192,
             "[detect] image size {} must be a multiple of the stride {}", c.imgsz, c.stride);
  const double r = std::min(static_cast<double>(c.imgsz) / height, static_cast<double>(c.imgsz) / width);
  LetterboxShape s;
  // A sliver (10000 x 1) would scale to 0 rows, which no resize makes: keep one.
  s.new_width = std::max(1, py_round(width * r));
  s.new_height = std::max(1, py_round(height * r));
  double dw = c.imgsz - s.new_width, dh = c.imgsz - s.new_height;
  if (!c.square) dw = std::fmod(dw, c.stride), dh = std::fmod(dh, c.stride);
  dw /= 2, dh /= 2;
  s.left = py_round(dw - 0.1);
  s.top = py_round(dh - 0.1);
  s.width = s.new_width + s.left + py_round(dw + 0.1);
  s.height = s.new_height + s.top + py_round(dh + 0.1);
  return s;
}

Image letterbox(const Image& image, const LetterboxConfig& c) {
  const LetterboxShape s = letterbox_shape(image.width, image.height, c);
  const Image scaled = s.new_width == image.width && s.new_height == image.height
                           ? image
                           : resize_bilinear_cv(image, s.new_width, s.new_height);
  Image out;
  out.width = s.width;
  out.height = s.height;
  out.rgb.assign(static_cast<size_t>(s.width) * s.height * 3, static_cast<uint8_t>(c.pad_value));
  const size_t row = static_cast<size_t>(s.new_width) * 3;
  for (int y = 0; y < s.new_height; ++y)
    std::memcpy(out.rgb.data() + ((static_cast<size_t>(y) + s.top) * s.width + s.left) * 3,
                scaled.rgb.data() + static_cast<size_t>(y) * row, row);
  return out;
}

void scale_boxes_back(float* xyxy, int count, int input_width, int input_height, int width, int height) {
  const double gain = std::min(static_cast<double>(input_height) / height, static_cast<double>(input_width) / width);
  const double pad_x = py_round((input_width - width * gain) / 2 - 0.1);
  const double pad_y = py_round((input_height - height * gain) / 2 - 0.1);
  for (int i = 0; i < count; ++i) {
    float* b = xyxy + 4 * i;
    // In float, as Ultralytics computes on its float32 tensors.
    b[0] = std::clamp(static_cast<float>((b[0] - static_cast<float>(pad_x)) / static_cast<float>(gain)), 0.f,
                      static_cast<float>(width));
    b[1] = std::clamp(static_cast<float>((b[1] - static_cast<float>(pad_y)) / static_cast<float>(gain)), 0.f,
                      static_cast<float>(height));
    b[2] = std::clamp(static_cast<float>((b[2] - static_cast<float>(pad_x)) / static_cast<float>(gain)), 0.f,
                      static_cast<float>(width));
    b[3] = std::clamp(static_cast<float>((b[3] - static_cast<float>(pad_y)) / static_cast<float>(gain)), 0.f,
                      static_cast<float>(height));
  }
}

}  // namespace kiln::detection
