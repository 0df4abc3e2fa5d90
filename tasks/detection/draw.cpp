#include "tasks/detection/draw.h"

#include <algorithm>
#include <cmath>

namespace kiln::detection {

namespace {

// Twenty distinct colours, cycled by class id.
constexpr uint8_t kPalette[20][3] = {{255, 56, 56},  {255, 157, 151}, {255, 112, 31}, {255, 178, 29},  {207, 210, 49},
                                     {72, 249, 10},  {146, 204, 23},  {61, 219, 134}, {26, 147, 52},   {0, 212, 187},
                                     {44, 153, 168}, {0, 194, 255},   {52, 69, 147},  {100, 115, 255}, {0, 24, 236},
                                     {132, 56, 255}, {82, 0, 133},    {203, 56, 255}, {255, 149, 200}, {255, 55, 199}};

void fill(Image& im, int x0, int y0, int x1, int y1, const uint8_t* c) {
  x0 = std::clamp(x0, 0, im.width), x1 = std::clamp(x1, 0, im.width);
  y0 = std::clamp(y0, 0, im.height), y1 = std::clamp(y1, 0, im.height);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) std::copy(c, c + 3, im.rgb.begin() + (static_cast<size_t>(y) * im.width + x) * 3);
}

}  // namespace

void draw_detections(Image& image, const std::vector<Detection>& detections) {
  constexpr int t = 2;  // line width
  // Worst first, so that the best boxes end on top.
  for (auto it = detections.rbegin(); it != detections.rend(); ++it) {
    const uint8_t* c = kPalette[static_cast<size_t>(std::max(it->class_id, 0)) % 20];
    const int x0 = static_cast<int>(std::floor(it->x1)), y0 = static_cast<int>(std::floor(it->y1));
    const int x1 = static_cast<int>(std::ceil(it->x2)), y1 = static_cast<int>(std::ceil(it->y2));
    fill(image, x0, y0, x1, y0 + t, c);
    fill(image, x0, y1 - t, x1, y1, c);
    fill(image, x0, y0, x0 + t, y1, c);
    fill(image, x1 - t, y0, x1, y1, c);
  }
}

}  // namespace kiln::detection
