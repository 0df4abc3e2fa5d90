// Decoded 8-bit RGB images and the decoders (libjpeg-turbo, libpng, libwebp). Decoding follows
// Pillow's defaults (Image.open(...).convert("RGB")) so that preprocessing matches timm exactly.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height * width * 3, row-major
};

constexpr uint64_t kMaxImagePixels = 1ull << 28;  // 16384 x 16384

// Decodes JPEG, PNG or WebP, chosen by the file's signature. Throws kiln::Error naming the file.
// exif_orientation: turn a JPEG upright as its EXIF orientation says, as OpenCV's imread does
// (Pillow, and so timm's preprocessing, keeps the stored pixels; exif.h). An image whose header
// says it has more than max_pixels pixels is refused before it is decoded.
Image decode_image(std::span<const uint8_t> bytes, const std::string& name, bool exif_orientation = false,
                   uint64_t max_pixels = kMaxImagePixels);
Image load_image(const std::string& path, bool exif_orientation = false);

}  // namespace kiln
