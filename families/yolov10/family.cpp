// The YOLOv10 family: yolov10n/s/m/b/l/x from the Hub checkpoints jameslahm/yolov10* as
// THU-MIG/yolov10's hub mixin saves them: config.json {"model": "yolov10s.yaml", "names": {...},
// "task": "detect"} and model.safetensors with the wrapper's whole state dict, fp32.
#include "core/error.h"
#include "families/yolov10/arch.h"
#include "families/yolov10/build_graph.h"
#include "graph/family_registry.h"

namespace kiln::yolov10 {

namespace {

constexpr int kMaxDet = 300;  // v10Detect.max_det: the head's output rows

// The class names: config.json's "names" {"0": "person", ...}, every index from 0 once.
std::vector<std::string> class_names(const nlohmann::json& cfg, int num_classes) {
  std::vector<std::string> names(num_classes);
  if (!cfg.contains("names")) {
    for (int i = 0; i < num_classes; ++i) names[i] = "class " + std::to_string(i);
    return names;
  }
  const auto& j = cfg["names"];
  KILN_CHECK(j.is_object() && j.size() == static_cast<size_t>(num_classes),
             "[yolov10] config.json: names must map each of the head's {} classes to a name", num_classes);
  std::vector<bool> seen(num_classes, false);
  for (const auto& [key, value] : j.items()) {
    int index = -1;
    try {
      size_t used = 0;
      index = std::stoi(key, &used);
      if (used != key.size()) index = -1;
    } catch (const std::exception&) {
    }
    KILN_CHECK(index >= 0 && index < num_classes && !seen[index] && value.is_string(),
               "[yolov10] config.json: bad names entry '{}'", key);
    seen[index] = true;
    names[index] = value.get<std::string>();
  }
  return names;
}

class YoloV10 : public Family {
 public:
  ModelDefinition build(Checkpoint& ckpt) const override {
    const auto& cfg = ckpt.config();
    const std::string arch_name = config_architecture(cfg);
    auto arch = make_arch(arch_name);
    KILN_CHECK(arch.has_value(), "[yolov10] unsupported architecture '{}'", arch_name);
    KILN_CHECK(cfg.value("task", std::string("detect")) == "detect", "[yolov10] config.json: task '{}' is not detect",
               cfg.value("task", std::string()));
    // The class count is the head's: its last class conv's output channels.
    const std::string cls = "model.model." + std::to_string(arch->layers.size() - 1) + ".one2one_cv3.0.2.weight";
    KILN_CHECK(ckpt.has(cls) && ckpt.shape(cls).size() == 4, "[yolov10] checkpoint {} has no tensor '{}'", ckpt.dir(),
               cls);
    const int64_t num_classes = ckpt.shape(cls)[0];
    KILN_CHECK(num_classes >= 1 && num_classes <= 100000, "[yolov10] {} has {} classes", cls, num_classes);

    ModelDefinition def;
    def.family = name();
    def.architecture = arch_name;
    def.task = "object_detection";
    build_graph(*arch, static_cast<int>(num_classes), kMaxDet, ckpt, def);
    auto unused = ckpt.unused();
    KILN_CHECK(unused.empty(), "[yolov10] checkpoint has {} tensor(s) the architecture does not use, e.g. '{}'",
               unused.size(), unused.empty() ? "" : unused.front());
    def.task_config = {
        {"graph", "main"},
        // Ultralytics' predictor: LetterBox(640, auto=True, stride=32), gray 114 borders, RGB / 255.
        {"preprocess", {{"imgsz", 640}, {"stride", 32}, {"pad_value", 114}}},
        {"strides", arch->strides},
        {"max_det", kMaxDet},
        {"labels", class_names(cfg, static_cast<int>(num_classes))},
    };
    return def;
  }
};

}  // namespace

}  // namespace kiln::yolov10

namespace kiln {
KILN_FAMILY(yolov10) { return std::make_unique<yolov10::YoloV10>(); }
}  // namespace kiln
