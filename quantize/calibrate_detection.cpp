#include "quantize/calibrate_detection.h"

#include <map>

#include "core/error.h"
#include "core/progress.h"
#include "quantize/calibration_bundle.h"
#include "tasks/detection/detector.h"
#include "tasks/detection/evaluate.h"
#include "tasks/image/image.h"

namespace kiln {

Fp8Clips calibrate_detection_activations(const ModelDefinition& def, const std::vector<Fp8Layer>& layers,
                                         const QuantRecipe& recipe, const CalibrationOptions& o) {
  KILN_CHECK(o.samples > 0, "[calibrate] --calib-samples must be at least 1");
  std::vector<std::string> paths = detection::yolo_images(o.data);
  if (paths.size() > o.samples) paths.resize(o.samples);
  const CalibrationBundle bundle(def);
  detection::Detector detector(Bundle::open(bundle.path()), "cpu-reference");
  std::map<std::string, AbsHistogram> hist;
  observe_layer_inputs(detector.engine(), layers, def.task_config.value("graph", std::string("main")), hist);
  ProgressBar bar("calibrate", paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    const Image image = load_image(paths[i], /*exif_orientation=*/true);  // as `kiln detect` reads it
    detector.detect({&image}, detection::DetectOptions{});
    bar.update(i + 1);
  }
  bar.finish();
  for (const auto& l : layers) KILN_CHECK(hist.at(l.weight).seen > 0, "[calibrate] layer {} saw no input", l.weight);
  return clips_of(hist, recipe, o);
}

}  // namespace kiln
