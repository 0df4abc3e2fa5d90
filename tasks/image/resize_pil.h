// Pillow's Image.resize for 8-bit RGB, reproduced bit for bit: separable, antialiased filters
// (support scaled by the downscale factor), coefficients normalised in double, converted to
// 22-bit fixed point, horizontal pass first. timm's eval transform resizes with Pillow, so this
// is what makes kiln's inputs equal timm's. Pillow is not a C++ library, hence written here.
#pragma once

#include <string>

#include "tasks/image/image.h"

namespace kiln {

enum class ResampleFilter { Bilinear, Bicubic, Lanczos };

// A rectangle of an image, in pixels.
struct ImageWindow {
  int left = 0, top = 0, width = 0, height = 0;
};

ResampleFilter parse_resample_filter(const std::string& name);  // "bilinear", "bicubic", "lanczos"
Image resize_pil(const Image& in, int out_width, int out_height, ResampleFilter filter);
// Only `window` of that result, each of its pixels computed as the full resize computes it (a
// centre crop after the resize costs only the pixels it keeps).
Image resize_pil(const Image& in, int out_width, int out_height, ResampleFilter filter, const ImageWindow& window);

}  // namespace kiln
