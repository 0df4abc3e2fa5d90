// Writing 8-bit RGB images as JPEG (libjpeg-turbo): what `kiln detect --draw` saves.
#pragma once

#include <string>

#include "tasks/image/image.h"

namespace kiln {

// grayscale: store one channel (the mean of R, G and B). Throws kiln::Error naming the file.
void write_jpeg(const Image& image, const std::string& path, int quality = 90, bool grayscale = false);

}  // namespace kiln
