#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

#include <csetjmp>
#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/read_file.h"
#include "tasks/image/exif.h"
#include "tasks/image/image.h"

namespace kiln {

namespace {

// Checked from the header, before the pixels are allocated.
void check_size(uint64_t w, uint64_t h, const std::string& name, uint64_t max_pixels) {
  KILN_CHECK(w > 0 && h > 0 && checked_mul(w, h, "image size") <= max_pixels,
             "[image] {}: size {}x{} is out of range (at most {} pixels)", name, w, h, max_pixels);
}

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

// Pillow decodes with libjpeg's defaults: islow IDCT and fancy upsampling.
Image decode_jpeg(std::span<const uint8_t> bytes, const std::string& name, uint64_t max_pixels) {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  // Pillow refuses truncated JPEGs ("image file is truncated") and ignores other warnings.
  err.mgr.emit_message = [](j_common_ptr c, int level) {
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) jpeg_error_exit(c);
  };
  Image img;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    fail("[image] {}: JPEG decode failed: {}", name, err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    fail("[image] {}: CMYK JPEGs are not supported", name);
  }
  cinfo.out_color_space = JCS_RGB;  // grayscale is replicated into R, G and B, as convert("RGB") does
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo);
  check_size(cinfo.output_width, cinfo.output_height, name, max_pixels);
  img.width = static_cast<int>(cinfo.output_width);
  img.height = static_cast<int>(cinfo.output_height);
  img.rgb.resize(static_cast<size_t>(img.width) * img.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img.rgb.data() + static_cast<size_t>(cinfo.output_scanline) * img.width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return img;
}

struct PngReader {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
  std::string error;
};

// Pillow's PNG path, mirrored with libpng's low-level API: palette and low-bit gray expanded,
// 16-bit samples reduced to their high byte (png_set_strip_16), gray replicated, alpha and
// transparency dropped without compositing, and no gamma correction.
Image decode_png(std::span<const uint8_t> bytes, const std::string& name, uint64_t max_pixels) {
  PngReader reader{bytes, 0, {}};
  png_structp png = png_create_read_struct(
      PNG_LIBPNG_VER_STRING, &reader,
      [](png_structp p, png_const_charp msg) {
        static_cast<PngReader*>(png_get_error_ptr(p))->error = msg;
        png_longjmp(p, 1);
      },
      [](png_structp, png_const_charp) {});
  KILN_CHECK(png, "[image] {}: libpng init failed", name);
  png_infop info = png_create_info_struct(png);
  Image img;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    fail("[image] {}: PNG decode failed: {}", name, reader.error);
  }
  png_set_read_fn(png, &reader, [](png_structp p, png_bytep out, png_size_t n) {
    auto* r = static_cast<PngReader*>(png_get_io_ptr(p));
    if (n > r->bytes.size() - r->pos) png_error(p, "file is truncated");
    std::memcpy(out, r->bytes.data() + r->pos, n);
    r->pos += n;
  });
  png_read_info(png, info);
  png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  check_size(w, h, name, max_pixels);
  int color = png_get_color_type(png, info);
  png_set_strip_16(png);
  png_set_packing(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  KILN_CHECK(png_get_rowbytes(png, info) == static_cast<size_t>(w) * 3, "[image] {}: unexpected PNG row layout", name);
  img.width = static_cast<int>(w);
  img.height = static_cast<int>(h);
  img.rgb.resize(static_cast<size_t>(w) * h * 3);
  std::vector<png_bytep> rows(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = img.rgb.data() + static_cast<size_t>(y) * w * 3;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return img;
}

Image decode_webp(std::span<const uint8_t> bytes, const std::string& name, uint64_t max_pixels) {
  int w = 0, h = 0;
  KILN_CHECK(WebPGetInfo(bytes.data(), bytes.size(), &w, &h), "[image] {}: not a valid WebP file", name);
  check_size(w, h, name, max_pixels);
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<size_t>(w) * h * 3);
  KILN_CHECK(WebPDecodeRGBInto(bytes.data(), bytes.size(), img.rgb.data(), img.rgb.size(), w * 3),
             "[image] {}: WebP decode failed", name);
  return img;
}

}  // namespace

Image decode_image(std::span<const uint8_t> b, const std::string& name, bool exif_orientation, uint64_t max_pixels) {
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    Image image = decode_jpeg(b, name, max_pixels);
    return exif_orientation ? apply_orientation(image, jpeg_exif_orientation(b)) : image;
  }
  if (b.size() >= 8 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0) return decode_png(b, name, max_pixels);
  if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(b.data() + 8, "WEBP", 4) == 0)
    return decode_webp(b, name, max_pixels);
  fail("[image] {}: not a JPEG, PNG or WebP image", name);
}

Image load_image(const std::string& path, bool exif_orientation) {
  const std::string file = read_file(path, kMaxSmallFileBytes);
  return decode_image({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, path, exif_orientation);
}

}  // namespace kiln
