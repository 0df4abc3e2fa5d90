#include "quantize/calibration_bundle.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "bundle/bundle.h"

namespace kiln {

namespace fs = std::filesystem;

CalibrationBundle::CalibrationBundle(const ModelDefinition& def) {
  static std::atomic<int> count{0};  // several in one process never share a name
  path_ = (fs::temp_directory_path() / fmt::format("kiln-calibrate-{}-{}.bundle", getpid(), count++)).string();
  try {
    write_bundle(path_, def, BuildInfo{});
  } catch (...) {
    std::error_code ec;
    fs::remove(path_, ec);
    throw;
  }
}

CalibrationBundle::~CalibrationBundle() {
  std::error_code ec;
  fs::remove(path_, ec);
}

}  // namespace kiln
