// A model written to a temporary bundle for calibration: the task classes that run a model the
// way it will be used (generation, detection with its letterbox and anchors) load bundles.
// Removed however calibration ends.
#pragma once

#include <string>

#include "graph/model_definition.h"

namespace kiln {

class CalibrationBundle {
 public:
  explicit CalibrationBundle(const ModelDefinition& def);
  ~CalibrationBundle();
  CalibrationBundle(const CalibrationBundle&) = delete;
  CalibrationBundle& operator=(const CalibrationBundle&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kiln
