// What kiln's own tools reach inside a kiln::Model beyond the public API: FP8 calibration
// observes the inputs of a bundle's layers while a task (generation) runs the model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kiln/kiln.h"

namespace kiln {

struct ModelAccess {
  // Called on the CPU (the reference kernels run node by node) before each node runs, with its
  // graph, its name and its first input as f32; for the graphs' engines made so far and later.
  using Observer =
      std::function<void(const std::string& graph, const std::string& node, const float* x, int64_t count)>;
  static void observe(Model& model, Observer observer);
};

}  // namespace kiln
