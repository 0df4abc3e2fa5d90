// Class names for a classifier, from a Hugging Face config.json.
#pragma once

#include <nlohmann/json.hpp>

namespace kiln::classification {

// timm's `label_names` mapped through `label_descriptions`, else transformers' `id2label`,
// else "class N". Always `num_classes` strings.
nlohmann::json labels_from_hf_config(const nlohmann::json& config, int num_classes);

}  // namespace kiln::classification
