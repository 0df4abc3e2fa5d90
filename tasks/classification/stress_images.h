// Generated images that stress preprocessing and the engines: constant and saturated colours,
// noise, extreme contrast, and tiny and huge sizes. A classifier must return finite logits for
// every one of them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tasks/image/image.h"

namespace kiln::classification {

std::vector<std::pair<std::string, Image>> stress_images();

}  // namespace kiln::classification
