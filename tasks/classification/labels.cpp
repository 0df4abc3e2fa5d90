#include "tasks/classification/labels.h"

#include <string>

namespace kiln::classification {

nlohmann::json labels_from_hf_config(const nlohmann::json& config, int num_classes) {
  nlohmann::json labels = nlohmann::json::array();
  const auto* names =
      config.contains("label_names") && config["label_names"].is_array() ? &config["label_names"] : nullptr;
  const auto* desc = config.contains("label_descriptions") && config["label_descriptions"].is_object()
                         ? &config["label_descriptions"]
                         : nullptr;
  const auto* id2label = config.contains("id2label") && config["id2label"].is_object() ? &config["id2label"] : nullptr;
  for (int i = 0; i < num_classes; ++i) {
    std::string label = "class " + std::to_string(i);
    if (names && i < static_cast<int>(names->size()) && (*names)[i].is_string()) {
      label = (*names)[i].get<std::string>();
      if (desc && desc->contains(label) && (*desc)[label].is_string()) label = (*desc)[label].get<std::string>();
    } else if (id2label && id2label->contains(std::to_string(i)) && (*id2label)[std::to_string(i)].is_string()) {
      label = (*id2label)[std::to_string(i)].get<std::string>();
    }
    labels.push_back(label);
  }
  return labels;
}

}  // namespace kiln::classification
