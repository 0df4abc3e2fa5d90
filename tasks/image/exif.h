// The EXIF orientation of a JPEG (tag 0x0112 of IFD0 in its APP1 "Exif" segment) and the
// rotation or mirroring it asks for. OpenCV's imread applies it (so Ultralytics' models see
// upright photos), Pillow's Image.open does not (so timm's classifiers see the stored pixels):
// each task decodes as its reference does. The parser reads untrusted bytes: every offset is
// checked, and anything malformed reads as orientation 1 (as stored), as OpenCV treats it.
#pragma once

#include <cstdint>
#include <span>

#include "tasks/image/image.h"

namespace kiln {

// 1..8 as EXIF defines them; 1 when the file has none or it cannot be read.
int jpeg_exif_orientation(std::span<const uint8_t> jpeg);
// The image as displayed: 2 mirrored, 3 turned 180 degrees, 4 flipped, 5 transposed, 6 turned
// 90 degrees clockwise, 7 transversed, 8 turned 90 degrees counter-clockwise.
Image apply_orientation(const Image& image, int orientation);

}  // namespace kiln
