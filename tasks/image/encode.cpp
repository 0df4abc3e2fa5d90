#include "tasks/image/encode.h"

#include <jpeglib.h>

#include <csetjmp>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/error.h"

namespace kiln {

namespace {

struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

}  // namespace

void write_jpeg(const Image& image, const std::string& path, int quality, bool grayscale) {
  KILN_CHECK(
      image.width > 0 && image.height > 0 && image.rgb.size() == static_cast<size_t>(image.width) * image.height * 3,
      "[image] cannot write an empty or malformed image to {}", path);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  KILN_CHECK(file, "[image] cannot write {}", path);
  std::vector<uint8_t> gray;
  if (grayscale) {
    gray.resize(static_cast<size_t>(image.width) * image.height);
    for (size_t i = 0; i < gray.size(); ++i)
      gray[i] = static_cast<uint8_t>((image.rgb[3 * i] + image.rgb[3 * i + 1] + image.rgb[3 * i + 2] + 1) / 3);
  }
  jpeg_compress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = on_error;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    fail("[image] {}: JPEG encode failed: {}", path, err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, file.get());
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = grayscale ? 1 : 3;
  cinfo.in_color_space = grayscale ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const uint8_t* data = grayscale ? gray.data() : image.rgb.data();
  const size_t row = static_cast<size_t>(image.width) * (grayscale ? 1 : 3);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW r = const_cast<uint8_t*>(data + cinfo.next_scanline * row);
    jpeg_write_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
}

}  // namespace kiln
