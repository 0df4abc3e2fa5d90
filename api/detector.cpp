// kiln::Detector: the public face of tasks/detection over a bundle.
#include "tasks/detection/detector.h"
#include "api/model_info.h"

#include "bundle/bundle.h"
#include "core/error.h"
#include "kiln/kiln.h"

namespace kiln {

struct Detector::Impl {
  std::unique_ptr<detection::Detector> model;
  ModelInfo info;
};

Detector::Detector() : impl_(std::make_unique<Impl>()) {}
Detector::~Detector() = default;

Status Detector::load(const std::string& path, std::unique_ptr<Detector>* out, const std::string& device) {
  try {
    auto bundle = Bundle::open(path);
    std::unique_ptr<Detector> d(new Detector());
    d->impl_->model = std::make_unique<detection::Detector>(bundle, device);
    ModelInfo& i = d->impl_->info = bundle_model_info(*bundle, d->impl_->model->engine().device());
    i.channels = 3;
    i.height = i.width = d->impl_->model->letterbox_config().imgsz;
    i.num_classes = static_cast<int>(d->impl_->model->labels().size());
    *out = std::move(d);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

const ModelInfo& Detector::info() const { return impl_->info; }
const std::vector<std::string>& Detector::labels() const { return impl_->model->labels(); }

namespace {

// Images go through the engine in chunks no larger than this, so that memory stays bounded.
constexpr size_t kChunk = 32;
constexpr int kMaxSide = 65536;  // pixels a side of an image to detect objects in

void check_sides(int width, int height, const std::string& what) {
  KILN_CHECK(width > 0 && height > 0 && width <= kMaxSide && height <= kMaxSide,
             "[detect] {} is {}x{}: each side must be 1 to {} pixels", what, width, height, kMaxSide);
}

}  // namespace

Status Detector::detect_images(const std::vector<ImageView>& images, const DetectionOptions& options,
                               std::vector<std::vector<DetectedObject>>* out) {
  try {
    out->clear();
    detection::DetectOptions o{options.conf, options.max_det, options.imgsz, options.square};
    const auto& labels = impl_->model->labels();
    for (size_t start = 0; start < images.size(); start += kChunk) {
      std::vector<Image> copies;
      for (size_t i = start; i < std::min(images.size(), start + kChunk); ++i) {
        const auto& v = images[i];
        KILN_CHECK(v.rgb, "[detect] image {} has no pixels", i);
        check_sides(v.width, v.height, fmt::format("image {}", i));
        copies.push_back(
            {v.width, v.height, std::vector<uint8_t>(v.rgb, v.rgb + static_cast<size_t>(v.width) * v.height * 3)});
      }
      std::vector<const Image*> ptrs;
      for (const auto& c : copies) ptrs.push_back(&c);
      for (const auto& dets : impl_->model->detect(ptrs, o)) {
        std::vector<DetectedObject> objs;
        for (const auto& d : dets) objs.push_back({d.x1, d.y1, d.x2, d.y2, d.score, d.class_id, labels[d.class_id]});
        out->push_back(std::move(objs));
      }
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

Status Detector::detect_files(const std::vector<std::string>& paths, const DetectionOptions& options,
                              std::vector<std::vector<DetectedObject>>* out) {
  try {
    out->clear();
    for (size_t start = 0; start < paths.size(); start += kChunk) {
      std::vector<Image> decoded;
      std::vector<ImageView> views;
      for (size_t i = start; i < std::min(paths.size(), start + kChunk); ++i) {
        decoded.push_back(load_image(paths[i], /*exif_orientation=*/true));
        check_sides(decoded.back().width, decoded.back().height, paths[i]);
      }
      for (const auto& d : decoded) views.push_back({d.width, d.height, d.rgb.data()});
      std::vector<std::vector<DetectedObject>> part;
      Status s = detect_images(views, options, &part);
      if (!s.ok()) return s;
      for (auto& p : part) out->push_back(std::move(p));
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

}  // namespace kiln
