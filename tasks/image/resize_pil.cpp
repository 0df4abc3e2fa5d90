#include "tasks/image/resize_pil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// Resamples rows [row0, row0 + rows) of `in` horizontally into `out`, only the output columns
// [col0, col0 + cols) of the full width c was made for. Cloned for AVX2: the baseline x86-64 set
// has no 32-bit vector multiply, so its vector loop is slower than the scalar one.
__attribute__((target_clones("avx2", "default"))) void horizontal(const Image& in, int row0, int rows, const Coeffs& c,
                                                                  int col0, int cols, Image& out) {
  out.width = cols;
  out.height = rows;
  out.rgb.assign(static_cast<size_t>(cols) * rows * 3, 0);
  // Each source row is widened to four int32 lanes a pixel (RGB and a spare); two neighbouring
  // pixels are then one 8-lane vector, and two taps of an output pixel one 8-lane multiply-add
  // with that pixel's weights laid out to match. Integer sums, so the same result as Pillow's
  // pixel-by-pixel loop.
  using Pixel = int32_t __attribute__((vector_size(16)));
  using Pair = int32_t __attribute__((vector_size(32)));
  const int pairs = (c.ksize + 1) / 2;
  // Plain int32 storage, read with memcpy: a vector type as a template argument loses its
  // alignment, and an aligned load from std::vector's memory would fault.
  std::vector<int32_t> weights(static_cast<size_t>(cols) * pairs * 8, 0);
  for (int x = 0; x < cols; ++x) {
    const int32_t* k = c.k.data() + static_cast<size_t>(x + col0) * c.ksize;
    int32_t* w = weights.data() + static_cast<size_t>(x) * pairs * 8;
    for (int i = 0; i < c.bounds[(x + col0) * 2 + 1]; ++i) std::fill_n(w + i * 4, 4, k[i]);  // tap i: lanes 4i..4i+3
  }
  // Padded with zero pixels so that the last pair of a window may run past the row.
  std::vector<int32_t> wide((static_cast<size_t>(in.width) + 2 * pairs) * 4, 0);
  std::vector<uint8_t> line(static_cast<size_t>(cols) * 3 + 1);  // one spare byte: each pixel stores four
  for (int y = 0; y < rows; ++y) {
    const uint8_t* src = in.rgb.data() + static_cast<size_t>(y + row0) * in.width * 3;
    for (int x = 0; x < in.width; ++x) {
      const Pixel px{src[x * 3], src[x * 3 + 1], src[x * 3 + 2], 0};
      std::memcpy(wide.data() + x * 4, &px, sizeof px);
    }
    for (int x = 0; x < cols; ++x) {
      const int xmin = c.bounds[(x + col0) * 2], taps = c.bounds[(x + col0) * 2 + 1];
      const int32_t* w = weights.data() + static_cast<size_t>(x) * pairs * 8;
      Pair sum{};
      for (int j = 0; 2 * j < taps; ++j) {
        Pair p, k;
        std::memcpy(&p, wide.data() + (xmin + 2 * j) * 4, sizeof p);
        std::memcpy(&k, w + j * 8, sizeof k);
        sum += p * k;
      }
      Pixel v =
          Pixel{sum[0], sum[1], sum[2], sum[3]} + Pixel{sum[4], sum[5], sum[6], sum[7]} + (1 << (kPrecisionBits - 1));
      // clip8 on four lanes: v >> 22 clamped to [0, 255] is the same function.
      v >>= kPrecisionBits;
      v = v < 0 ? 0 : v;
      v = v > 255 ? 255 : v;
      const auto bytes = __builtin_convertvector(v, uint8_t __attribute__((vector_size(4))));
      std::memcpy(line.data() + x * 3, &bytes, 4);
    }
    std::memcpy(out.rgb.data() + static_cast<size_t>(y) * cols * 3, line.data(), static_cast<size_t>(cols) * 3);
  }
}

// Resamples `in` vertically into `out`: output rows [row0, row0 + rows) of the full height c was
// made for, columns [col0, col0 + cols) of `in`, whose first row is the source's row `in_row0`.
// Cloned for AVX2 like horizontal().
__attribute__((target_clones("avx2", "default"))) void vertical(const Image& in, int in_row0, const Coeffs& c, int row0,
                                                                int rows, int col0, int cols, Image& out) {
  out.width = cols;
  out.height = rows;
  out.rgb.assign(static_cast<size_t>(cols) * rows * 3, 0);
  const size_t stride = static_cast<size_t>(in.width) * 3, span = static_cast<size_t>(cols) * 3;
  // Whole rows at a time: each input row scaled and added to an accumulator row, which the
  // compiler vectorises (integer sums: the same result as one pixel at a time).
  std::vector<int32_t> acc(span);
  for (int y = 0; y < rows; ++y) {
    int ymin = c.bounds[(y + row0) * 2] - in_row0, ymax = c.bounds[(y + row0) * 2 + 1];
    const int32_t* k = c.k.data() + static_cast<size_t>(y + row0) * c.ksize;
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int i = 0; i < ymax; ++i) {
      const uint8_t* row = in.rgb.data() + static_cast<size_t>(ymin + i) * stride + static_cast<size_t>(col0) * 3;
      const int32_t ki = k[i];
      for (size_t x = 0; x < span; ++x) acc[x] += row[x] * ki;
    }
    uint8_t* dst = out.rgb.data() + y * span;
    for (size_t x = 0; x < span; ++x) dst[x] = clip8(acc[x]);
  }
}

Image crop(const Image& in, const ImageWindow& w) {
  Image out{w.width, w.height, std::vector<uint8_t>(static_cast<size_t>(w.width) * w.height * 3)};
  for (int y = 0; y < w.height; ++y)
    std::copy_n(in.rgb.data() + (static_cast<size_t>(y + w.top) * in.width + w.left) * 3,
                static_cast<size_t>(w.width) * 3, out.rgb.data() + static_cast<size_t>(y) * w.width * 3);
  return out;
}

}  // namespace

ResampleFilter parse_resample_filter(const std::string& name) {
  if (name == "bilinear") return ResampleFilter::Bilinear;
  if (name == "bicubic") return ResampleFilter::Bicubic;
  if (name == "lanczos") return ResampleFilter::Lanczos;
  fail("[resize] unsupported interpolation '{}'", name);
}

Image resize_pil(const Image& in, int out_w, int out_h, ResampleFilter filter) {
  return resize_pil(in, out_w, out_h, filter, {0, 0, out_w, out_h});
}

Image resize_pil(const Image& in, int out_w, int out_h, ResampleFilter filter, const ImageWindow& w) {
  // Extreme aspect ratios are legitimate (a 100x1 image becomes 25600x256 before the crop, as in
  // Pillow); what is bounded is the total size.
  KILN_CHECK(out_w > 0 && out_h > 0 && static_cast<int64_t>(out_w) * out_h <= (int64_t{1} << 28),
             "[resize] target size {}x{} is out of range", out_w, out_h);
  KILN_CHECK(w.left >= 0 && w.top >= 0 && w.width > 0 && w.height > 0 && w.width <= out_w - w.left &&
                 w.height <= out_h - w.top,
             "[resize] window {}x{} at ({}, {}) is outside the {}x{} result", w.width, w.height, w.left, w.top, out_w,
             out_h);
  if (out_w == in.width && out_h == in.height) return crop(in, w);
  Coeffs vert = precompute(in.height, out_h, filter);
  // Pillow resamples horizontally only the rows the vertical pass will read (here: for the
  // window's rows; every output pixel is computed as Pillow computes it).
  int row_first = out_h == in.height ? w.top : vert.bounds[w.top * 2];
  int row_last = out_h == in.height
                     ? w.top + w.height
                     : vert.bounds[(w.top + w.height - 1) * 2] + vert.bounds[(w.top + w.height - 1) * 2 + 1];
  Image tmp;
  const Image* src = &in;
  int src_row0 = 0, src_col0 = w.left;  // where the window's first row and column are in *src
  if (out_w != in.width) {
    horizontal(in, row_first, row_last - row_first, precompute(in.width, out_w, filter), w.left, w.width, tmp);
    src = &tmp;
    src_row0 = row_first;
    src_col0 = 0;
  }
  if (out_h == in.height) return crop(*src, {src_col0, w.top - src_row0, w.width, w.height});
  Image out;
  vertical(*src, src_row0, vert, w.top, w.height, src_col0, w.width, out);
  return out;
}

}  // namespace kiln
