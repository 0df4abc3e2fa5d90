#include "tasks/classification/stress_images.h"

#include <cstdint>
#include <random>

namespace kiln::classification {

namespace {

Image filled(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  Image img{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (size_t p = 0; p < static_cast<size_t>(w) * h; ++p) {
    img.rgb[p * 3] = r;
    img.rgb[p * 3 + 1] = g;
    img.rgb[p * 3 + 2] = b;
  }
  return img;
}

template <typename Fn>
Image pattern(int w, int h, Fn value) {  // value(x, y, channel) -> 0..255
  Image img{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        img.rgb[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(value(x, y, c));
  return img;
}

}  // namespace

std::vector<std::pair<std::string, Image>> stress_images() {
  std::vector<std::pair<std::string, Image>> out;
  const uint8_t colours[][3] = {{0, 0, 0},   {255, 255, 255}, {128, 128, 128}, {255, 0, 0},  {0, 255, 0},
                                {0, 0, 255}, {0, 255, 255},   {255, 0, 255},   {255, 255, 0}};
  for (const auto& c : colours)
    out.emplace_back("constant " + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]),
                     filled(256, 256, c[0], c[1], c[2]));
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    out.emplace_back("uniform noise " + std::to_string(seed),
                     pattern(300, 240, [&](int, int, int) { return rng() & 255; }));
  }
  {
    std::mt19937 rng(7);
    out.emplace_back("salt and pepper", pattern(256, 256, [&](int, int, int) { return (rng() & 1) ? 255 : 0; }));
    out.emplace_back("saturated colour noise",
                     pattern(256, 256, [&](int, int, int) { return (rng() % 3 == 0) ? 255 : 0; }));
  }
  out.emplace_back("checkerboard 1px", pattern(256, 256, [](int x, int y, int) { return ((x + y) & 1) * 255; }));
  out.emplace_back("checkerboard 8px",
                   pattern(256, 256, [](int x, int y, int) { return (((x / 8) + (y / 8)) & 1) * 255; }));
  out.emplace_back("vertical stripes", pattern(256, 256, [](int x, int, int) { return (x & 1) * 255; }));
  out.emplace_back("horizontal stripes", pattern(256, 256, [](int, int y, int) { return (y & 2) ? 255 : 0; }));
  out.emplace_back("one white pixel",
                   pattern(256, 256, [](int x, int y, int) { return x == 128 && y == 128 ? 255 : 0; }));
  out.emplace_back("horizontal ramp", pattern(256, 256, [](int x, int, int) { return x; }));
  out.emplace_back("radial", pattern(256, 256, [](int x, int y, int c) {
                     int d = (x - 128) * (x - 128) + (y - 128) * (y - 128);
                     return (d / 64 + c * 40) & 255;
                   }));
  out.emplace_back("1x1", filled(1, 1, 200, 100, 50));
  out.emplace_back("2x3", pattern(2, 3, [](int x, int y, int c) { return (x * 97 + y * 31 + c * 60) & 255; }));
  out.emplace_back("7x5", pattern(7, 5, [](int x, int y, int c) { return (x * 37 + y * 71 + c * 11) & 255; }));
  out.emplace_back("100x1 line", pattern(100, 1, [](int x, int, int) { return (x * 5) & 255; }));
  out.emplace_back("1x100 line", pattern(1, 100, [](int, int y, int) { return (y * 5) & 255; }));
  out.emplace_back("16x16 noise",
                   pattern(16, 16, [](int x, int y, int c) { return (x * 131 + y * 17 + c * 7) * 2654435761u >> 24; }));
  out.emplace_back("4000x3000 gradient",
                   pattern(4000, 3000, [](int x, int y, int c) { return (x / 16 + y / 12 + c * 85) & 255; }));
  return out;
}

}  // namespace kiln::classification
