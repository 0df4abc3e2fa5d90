#include "tasks/image/resize_pil.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace kiln {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) {
  if (-3.0 <= x && x < 3.0) return sinc(x) * sinc(x / 3);
  return 0.0;
}

struct Coeffs {
  int ksize = 0;
  std::vector<int> bounds;  // per output: first input index, count
  std::vector<int32_t> k;   // per output: ksize fixed-point weights
};

// Pillow's precompute_coeffs + normalize_coeffs_8bpc.
Coeffs precompute(int in_size, int out_size, ResampleFilter f) {
  double (*filter)(double) = f == ResampleFilter::Bilinear  ? bilinear
                             : f == ResampleFilter::Bicubic ? bicubic
                                                            : lanczos;
  double support = f == ResampleFilter::Bilinear ? 1.0 : f == ResampleFilter::Bicubic ? 2.0 : 3.0;
  double scale = static_cast<double>(in_size) / out_size;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  support *= filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(out_size * 2);
  c.k.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> kk(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    double center = (xx + 0.5) * scale;
    double ww = 0.0, ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    for (int x = 0; x < xmax; ++x) {
      double w = filter((x + xmin - center + 0.5) * ss);
      kk[x] = w;
      ww += w;
    }
    for (int x = 0; x < xmax; ++x) {
      double v = ww != 0.0 ? kk[x] / ww : kk[x];
      c.k[static_cast<size_t>(xx) * c.ksize + x] =
          static_cast<int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[xx * 2] = xmin;
    c.bounds[xx * 2 + 1] = xmax;
  }
  return c;
}

uint8_t clip8(int32_t v) {
  if (v >= (1 << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

// Resamples rows [row0, row0 + rows) of `in` horizontally into `out` (rows x out_w).
void horizontal(const Image& in, int row0, int rows, const Coeffs& c, int out_w, Image& out) {
  out.width = out_w;
  out.height = rows;
  out.rgb.assign(static_cast<size_t>(out_w) * rows * 3, 0);
  for (int y = 0; y < rows; ++y) {
    const uint8_t* src = in.rgb.data() + static_cast<size_t>(y + row0) * in.width * 3;
    uint8_t* dst = out.rgb.data() + static_cast<size_t>(y) * out_w * 3;
    for (int x = 0; x < out_w; ++x) {
      int xmin = c.bounds[x * 2], xmax = c.bounds[x * 2 + 1];
      const int32_t* k = c.k.data() + static_cast<size_t>(x) * c.ksize;
      const uint8_t* p = src + xmin * 3;
      // The three channels in one pass over the window (integer sums: the order is free).
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int i = 0; i < xmax; ++i) {
        s0 += p[i * 3] * k[i];
        s1 += p[i * 3 + 1] * k[i];
        s2 += p[i * 3 + 2] * k[i];
      }
      dst[x * 3] = clip8(s0);
      dst[x * 3 + 1] = clip8(s1);
      dst[x * 3 + 2] = clip8(s2);
    }
  }
}

void vertical(const Image& in, const Coeffs& c, int out_h, Image& out) {
  out.width = in.width;
  out.height = out_h;
  out.rgb.assign(static_cast<size_t>(in.width) * out_h * 3, 0);
  const size_t stride = static_cast<size_t>(in.width) * 3;
  // Whole rows at a time: each input row scaled and added to an accumulator row, which the
  // compiler vectorises (integer sums: the same result as one pixel at a time).
  std::vector<int32_t> acc(stride);
  for (int y = 0; y < out_h; ++y) {
    int ymin = c.bounds[y * 2], ymax = c.bounds[y * 2 + 1];
    const int32_t* k = c.k.data() + static_cast<size_t>(y) * c.ksize;
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int i = 0; i < ymax; ++i) {
      const uint8_t* row = in.rgb.data() + static_cast<size_t>(ymin + i) * stride;
      const int32_t ki = k[i];
      for (size_t x = 0; x < stride; ++x) acc[x] += row[x] * ki;
    }
    uint8_t* dst = out.rgb.data() + y * stride;
    for (size_t x = 0; x < stride; ++x) dst[x] = clip8(acc[x]);
  }
}

}  // namespace

ResampleFilter parse_resample_filter(const std::string& name) {
  if (name == "bilinear") return ResampleFilter::Bilinear;
  if (name == "bicubic") return ResampleFilter::Bicubic;
  if (name == "lanczos") return ResampleFilter::Lanczos;
  fail("[resize] unsupported interpolation '{}'", name);
}

Image resize_pil(const Image& in, int out_w, int out_h, ResampleFilter filter) {
  // Extreme aspect ratios are legitimate (a 100x1 image becomes 25600x256 before the crop, as in
  // Pillow); what is bounded is the total size.
  KILN_CHECK(out_w > 0 && out_h > 0 && static_cast<int64_t>(out_w) * out_h <= (int64_t{1} << 28),
             "[resize] target size {}x{} is out of range", out_w, out_h);
  if (out_w == in.width && out_h == in.height) return in;
  Coeffs vert = precompute(in.height, out_h, filter);
  // Pillow resamples only the rows the vertical pass will read.
  int row_first = vert.bounds[0];
  int row_last = vert.bounds[(out_h - 1) * 2] + vert.bounds[(out_h - 1) * 2 + 1];
  Image tmp;
  const Image* src = &in;
  if (out_w != in.width) {
    horizontal(in, row_first, row_last - row_first, precompute(in.width, out_w, filter), out_w, tmp);
    for (int y = 0; y < out_h; ++y) vert.bounds[y * 2] -= row_first;
    src = &tmp;
  }
  if (out_h == in.height) return *src;
  Image out;
  vertical(*src, vert, out_h, out);
  return out;
}

}  // namespace kiln
