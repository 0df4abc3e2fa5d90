#include "tasks/image/exif.h"

#include <algorithm>

namespace kiln {

namespace {

uint32_t read(std::span<const uint8_t> b, size_t at, int bytes, bool little) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    const uint32_t byte = b[at + (little ? bytes - 1 - i : i)];
    v = (v << 8) | byte;
  }
  return v;
}

// The orientation entry of a TIFF block (the APP1 payload after "Exif\0\0").
int tiff_orientation(std::span<const uint8_t> t) {
  if (t.size() < 8) return 1;
  const bool little = t[0] == 'I' && t[1] == 'I';
  if (!little && !(t[0] == 'M' && t[1] == 'M')) return 1;
  if (read(t, 2, 2, little) != 42) return 1;
  const uint64_t ifd = read(t, 4, 4, little);
  if (ifd + 2 > t.size()) return 1;
  const uint32_t entries = read(t, ifd, 2, little);
  for (uint32_t i = 0; i < entries; ++i) {
    const uint64_t e = ifd + 2 + 12ull * i;
    if (e + 12 > t.size()) return 1;
    // Tag 0x0112, type SHORT, one value: in the first two bytes of the value field.
    if (read(t, e, 2, little) == 0x0112 && read(t, e + 2, 2, little) == 3 && read(t, e + 4, 4, little) == 1) {
      const uint32_t v = read(t, e + 8, 2, little);
      return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
    }
  }
  return 1;
}

}  // namespace

int jpeg_exif_orientation(std::span<const uint8_t> b) {
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return 1;
  size_t at = 2;
  // Marker segments up to the image data: FF, a marker byte, a big-endian length that counts
  // itself.
  while (at + 4 <= b.size() && b[at] == 0xFF) {
    const uint8_t marker = b[at + 1];
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // no length
      at += 2;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return 1;  // scan data or the end: no EXIF before it
    const size_t length = read(b, at + 2, 2, false);
    if (length < 2 || at + 2 + length > b.size()) return 1;
    const std::span<const uint8_t> payload = b.subspan(at + 4, length - 2);
    static constexpr uint8_t kExif[6] = {'E', 'x', 'i', 'f', 0, 0};
    if (marker == 0xE1 && payload.size() >= 6 && std::equal(kExif, kExif + 6, payload.begin()))
      return tiff_orientation(payload.subspan(6));
    at += 2 + length;
  }
  return 1;
}

Image apply_orientation(const Image& im, int orientation) {
  if (orientation <= 1 || orientation > 8) return im;
  const bool swap = orientation >= 5;  // the axes trade places
  Image out;
  out.width = swap ? im.height : im.width;
  out.height = swap ? im.width : im.height;
  out.rgb.resize(im.rgb.size());
  const int W = im.width, H = im.height;
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      int sx = x, sy = y;  // the stored pixel shown at (x, y)
      switch (orientation) {
        case 2:
          sx = W - 1 - x;
          break;
        case 3:
          sx = W - 1 - x, sy = H - 1 - y;
          break;
        case 4:
          sy = H - 1 - y;
          break;
        case 5:
          sx = y, sy = x;
          break;
        case 6:
          sx = y, sy = H - 1 - x;
          break;
        case 7:
          sx = W - 1 - y, sy = H - 1 - x;
          break;
        case 8:
          sx = W - 1 - y, sy = x;
          break;
      }
      const uint8_t* s = im.rgb.data() + (static_cast<size_t>(sy) * W + sx) * 3;
      std::copy(s, s + 3, out.rgb.begin() + (static_cast<size_t>(y) * out.width + x) * 3);
    }
  return out;
}

}  // namespace kiln
