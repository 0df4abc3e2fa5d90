// Runs a manifest's gates on this machine: builds each gate's checkpoint as the manifest says,
// then checks parity against reference tensors or the task's evaluation on held-out data.
// Gates that need a device this machine lacks are skipped and say so.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "validate/manifest.h"

namespace kiln {

struct GateResult {
  std::string gate;
  std::string status;  // "passed", "failed", "skipped"
  std::string detail;  // the measurements against the thresholds, or why it was skipped
  nlohmann::json metrics = nlohmann::json::object();
};

// work_dir holds the bundles built for the gates. Reports each gate as it finishes.
std::vector<GateResult> run_gates(const Manifest& m, const std::string& data_dir, const std::string& work_dir,
                                  const std::function<void(const GateResult&)>& report);

}  // namespace kiln
