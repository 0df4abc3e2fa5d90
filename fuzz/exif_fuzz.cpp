// libFuzzer target for the EXIF orientation reader (tasks/image/exif.h): any bytes as a JPEG's
// header segments; the orientation read must be 1..8, and applying it to a small image must keep
// its pixels.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "tasks/image/exif.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int o = kiln::jpeg_exif_orientation(std::span(data, size));
  if (o < 1 || o > 8) std::abort();
  kiln::Image im{3, 2, std::vector<uint8_t>(18, 7)};
  const kiln::Image up = kiln::apply_orientation(im, o);
  if (up.rgb.size() != im.rgb.size() || up.width * up.height != 6) std::abort();
  return 0;
}
