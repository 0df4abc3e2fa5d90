#include "tasks/detection/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bundle/bundle.h"
#include "core/error.h"
#include "core/progress.h"
#include "tasks/detection/detector.h"

namespace kiln::detection {

namespace fs = std::filesystem;

std::vector<std::string> yolo_images(const std::string& folder) {
  const fs::path dir = fs::path(folder) / "images";
  KILN_CHECK(fs::is_directory(dir), "[dataset] {} has no images/ folder (a YOLO dataset: images/ and labels/)", folder);
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp"))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  KILN_CHECK(!out.empty(), "[dataset] {} holds no JPEG, PNG or WebP image", dir.string());
  return out;
}

std::vector<Box> read_yolo_labels(const std::string& path, int width, int height, int num_classes) {
  std::vector<Box> boxes;
  std::ifstream in(path);
  if (!in) return boxes;  // an image without objects has no label file
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream s(line);
    double c = -1, cx = 0, cy = 0, w = 0, h = 0;
    std::string extra;
    const bool ok = static_cast<bool>(s >> c >> cx >> cy >> w >> h) && !(s >> extra);
    KILN_CHECK(ok && c >= 0 && c < num_classes && c == std::floor(c) && std::isfinite(cx) && std::isfinite(cy) &&
                   std::isfinite(w) && std::isfinite(h) && w >= 0 && h >= 0,
               "[eval] {} line {}: expected 'class cx cy w h' with a class below {}", path, n, num_classes);
    Box b;
    b.class_id = static_cast<int>(c);
    b.x1 = static_cast<float>((cx - w / 2) * width);
    b.y1 = static_cast<float>((cy - h / 2) * height);
    b.x2 = static_cast<float>((cx + w / 2) * width);
    b.y2 = static_cast<float>((cy + h / 2) * height);
    boxes.push_back(b);
  }
  return boxes;
}

nlohmann::json DetectionEvalReport::to_json() const {
  return {{"images", images},
          {"map50_95", map.map50_95},
          {"map50", map.map50},
          {"map75", map.map75},
          {"classes", map.classes},
          {"ground_truth", map.ground_truth},
          {"detections", map.detections},
          {"seconds", seconds},
          {"decode_ms", decode_ms},
          {"preprocess_ms", preprocess_ms},
          {"inference_ms", inference_ms},
          {"postprocess_ms", postprocess_ms},
          {"images_per_s", images_per_s},
          {"device", device},
          {"data", data}};
}

DetectionEvalReport evaluate_detection(const std::string& bundle_path, const DetectionEvalOptions& o) {
  Detector model(Bundle::open(bundle_path), o.device);
  std::vector<std::string> paths = yolo_images(o.data);
  if (o.limit && o.limit < paths.size()) paths.resize(o.limit);
  DetectOptions d;
  d.conf = o.conf;
  d.max_det = o.max_det;
  d.imgsz = o.imgsz;
  d.square = o.square;
  KILN_CHECK(o.batch >= 1, "[eval] --batch must be at least 1");
  std::vector<std::vector<Box>> truth, found;
  ProgressBar bar("eval", paths.size());
  const auto start = std::chrono::steady_clock::now();
  double decode_seconds = 0;
  for (size_t first = 0; first < paths.size(); first += static_cast<size_t>(o.batch)) {
    const size_t last = std::min(paths.size(), first + static_cast<size_t>(o.batch));
    std::vector<Image> images;
    for (size_t i = first; i < last; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      images.push_back(load_image(paths[i], /*exif_orientation=*/true));  // as cv2.imread reads it
      decode_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const fs::path label = fs::path(o.data) / "labels" / (fs::path(paths[i]).stem().string() + ".txt");
      truth.push_back(read_yolo_labels(label.string(), images.back().width, images.back().height,
                                       static_cast<int>(model.labels().size())));
    }
    std::vector<const Image*> batch;
    for (const Image& im : images) batch.push_back(&im);
    for (const auto& per_image : model.detect(batch, d)) {
      std::vector<Box> boxes;
      for (const Detection& det : per_image) boxes.push_back({det.x1, det.y1, det.x2, det.y2, det.class_id, det.score});
      found.push_back(std::move(boxes));
      if (o.progress) bar.advance();
    }
  }
  bar.finish();
  DetectionEvalReport r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.images = paths.size();
  r.images_per_s = r.images / std::max(r.seconds, 1e-9);
  r.map = coco_map(truth, found, 100);
  const double per_image_ms = 1000.0 / std::max<size_t>(r.images, 1);
  r.decode_ms = decode_seconds * per_image_ms;
  r.preprocess_ms = model.stage_seconds().preprocess * per_image_ms;
  r.inference_ms = model.stage_seconds().inference * per_image_ms;
  r.postprocess_ms = model.stage_seconds().postprocess * per_image_ms;
  r.device = model.engine().device();
  r.data = o.data;
  return r;
}

}  // namespace kiln::detection
