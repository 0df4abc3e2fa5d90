#include "api/model_info.h"

namespace kiln {

ModelInfo bundle_model_info(const Bundle& bundle, const std::string& device) {
  const auto& m = bundle.manifest();
  const auto& model = m.value("model", nlohmann::json::object());
  ModelInfo i;
  i.model_id = model.value("id", "");
  i.revision = model.value("revision", "");
  i.family = model.value("family", "");
  i.architecture = model.value("architecture", "");
  i.precision = bundle.precision();
  i.kiln_version = m.value("kiln_version", "");
  i.created = m.value("created", "");
  i.task = m.at("task").value("type", "");
  i.batch_sizes = m.value("build", nlohmann::json::object()).value("batch_sizes", std::vector<int>{1});
  i.bundle_bytes = bundle.file_size();
  i.device = device;
  return i;
}

}  // namespace kiln
