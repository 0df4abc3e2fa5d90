#include "tasks/image/resize_cv.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kiln {

namespace {

constexpr int kCoefBits = 11, kCoefScale = 1 << kCoefBits;
// OpenCV's vertical pass runs SIMD code over whole rows (its last vector overlapping the one
// before) and scalar code only over rows shorter than a vector; the two round differently. The
// vector is 32 bytes with AVX2 (checked against OpenCV 5.0's output for rows of 210 to 2559 bytes;
// rows under 32 bytes, images under 11 pixels wide, are not checked).
constexpr int kVectorBytes = 32;

// saturate_cast<short>(float): round to nearest, ties to even (cvRound).
int16_t round_coef(float v) { return static_cast<int16_t>(std::clamp(std::nearbyint(v), -32768.0f, 32767.0f)); }

// Source positions and weights along one axis, as cv::resize computes them for INTER_LINEAR:
// with scale = 1 / (dst / src) in double, each position's fraction rounded to float. Along x a
// position outside the image takes the edge pixel with weight 1; along y only the rows are
// clamped, the weights stay (both rows are then the edge row, weighed as the fraction says).
struct Taps {
  std::vector<int> first, second;  // source indices
  std::vector<int16_t> w0, w1;     // fixed-point weights of the two
};

Taps taps(int src, int dst, bool clamp_weights) {
  const double scale = 1.0 / (static_cast<double>(dst) / src);
  Taps t;
  t.first.resize(dst);
  t.second.resize(dst);
  t.w0.resize(dst);
  t.w1.resize(dst);
  for (int d = 0; d < dst; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    if (clamp_weights) {
      if (s < 0) f = 0, s = 0;
      if (s >= src - 1) f = 0, s = src - 1;
    }
    t.first[d] = std::clamp(s, 0, src - 1);
    t.second[d] = std::clamp(s + 1, 0, src - 1);
    t.w0[d] = round_coef((1.f - f) * kCoefScale);
    t.w1[d] = round_coef(f * kCoefScale);
  }
  return t;
}

// INTER_AREA's exact 2x shrink: the rounded mean of each 2x2 block.
Image halve(const Image& src, int width, int height) {
  Image out;
  out.width = width;
  out.height = height;
  out.rgb.resize(static_cast<size_t>(width) * height * 3);
  const size_t row = static_cast<size_t>(src.width) * 3;
  for (int y = 0; y < height; ++y) {
    const uint8_t* a = src.rgb.data() + 2 * y * row;
    const uint8_t* b = a + row;
    uint8_t* o = out.rgb.data() + static_cast<size_t>(y) * width * 3;
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        const int i = 6 * x + c;
        o[3 * x + c] = static_cast<uint8_t>((a[i] + a[i + 3] + b[i] + b[i + 3] + 2) >> 2);
      }
  }
  return out;
}

}  // namespace

Image resize_bilinear_cv(const Image& src, int width, int height) {
  KILN_CHECK(src.width > 0 && src.height > 0 && width > 0 && height > 0 && width <= 65536 && height <= 65536,
             "[resize] cannot resize {}x{} to {}x{}", src.width, src.height, width, height);
  if (src.width == 2 * width && src.height == 2 * height) return halve(src, width, height);
  const Taps tx = taps(src.width, width, true), ty = taps(src.height, height, false);
  const int row = width * 3;
  // The horizontal pass of one source row: sums scaled by 2^11, exact in int.
  auto horizontal = [&](int sy, std::vector<int>& out) {
    const uint8_t* s = src.rgb.data() + static_cast<size_t>(sy) * src.width * 3;
    for (int x = 0; x < width; ++x) {
      const int a = tx.first[x] * 3, b = tx.second[x] * 3;
      for (int c = 0; c < 3; ++c) out[3 * x + c] = s[a + c] * tx.w0[x] + s[b + c] * tx.w1[x];
    }
  };
  Image out;
  out.width = width;
  out.height = height;
  out.rgb.resize(static_cast<size_t>(row) * height);
  std::vector<int> r0(row), r1(row);
  int have0 = -1, have1 = -1;  // the source rows r0 and r1 hold
  const int simd_end = row >= kVectorBytes ? row : 0;
  for (int y = 0; y < height; ++y) {
    const int s0 = ty.first[y], s1 = ty.second[y];
    if (have0 != s0) {
      if (have1 == s0)
        std::swap(r0, r1), std::swap(have0, have1);
      else
        horizontal(s0, r0), have0 = s0;
    }
    if (have1 != s1) horizontal(s1, r1), have1 = s1;
    const int b0 = ty.w0[y], b1 = ty.w1[y];
    uint8_t* o = out.rgb.data() + static_cast<size_t>(y) * row;
    int x = 0;
    // The SIMD loop: (S >> 4) as int16, multiplied by the weight keeping the high 16 bits, the
    // two summed and rounded by 2 more bits.
    for (; x < simd_end; ++x) {
      const int v = (((r0[x] >> 4) * b0) >> 16) + (((r1[x] >> 4) * b1) >> 16);
      o[x] = static_cast<uint8_t>(std::clamp((v + 2) >> 2, 0, 255));
    }
    for (; x < row; ++x) {
      const int v = (r0[x] * b0 + r1[x] * b1 + (1 << (2 * kCoefBits - 1))) >> (2 * kCoefBits);
      o[x] = static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return out;
}

}  // namespace kiln
