// kiln::Classifier: the public face of tasks/classification over a bundle.
#include "tasks/classification/classifier.h"
#include "api/model_info.h"
#include "bundle/bundle.h"
#include "core/error.h"
#include "kiln/kiln.h"

namespace kiln {

struct Classifier::Impl {
  std::unique_ptr<classification::ImageClassifier> model;
  ModelInfo info;
};

Classifier::Classifier() : impl_(std::make_unique<Impl>()) {}
Classifier::~Classifier() = default;

Status Classifier::load(const std::string& path, std::unique_ptr<Classifier>* out, const std::string& device) {
  try {
    auto bundle = Bundle::open(path);
    std::unique_ptr<Classifier> c(new Classifier());
    c->impl_->model = std::make_unique<classification::ImageClassifier>(bundle, device);
    ModelInfo& i = c->impl_->info = bundle_model_info(*bundle, c->impl_->model->engine().device());
    const auto& pre = c->impl_->model->preprocess_config();
    i.channels = pre.channels;
    i.height = pre.height;
    i.width = pre.width;
    i.num_classes = c->impl_->model->num_classes();
    *out = std::move(c);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

const ModelInfo& Classifier::info() const { return impl_->info; }
const std::vector<std::string>& Classifier::labels() const { return impl_->model->labels(); }

namespace {

constexpr int kMaxSide = 16384;  // pixels a side of an image to classify

void check_sides(int width, int height, const std::string& what) {
  KILN_CHECK(width > 0 && height > 0 && width <= kMaxSide && height <= kMaxSide,
             "[classify] {} is {}x{}: each side must be 1 to {} pixels", what, width, height, kMaxSide);
}

Classification to_result(const float* logits, int classes, int k, const std::vector<std::string>& labels) {
  Classification c;
  c.logits.assign(logits, logits + classes);
  for (const auto& s : classification::top_k(logits, classes, k))
    c.top.push_back({s.index, labels[s.index], s.probability});
  return c;
}

}  // namespace

Status Classifier::classify_images(const std::vector<ImageView>& images, int top_k, std::vector<Classification>* out) {
  try {
    out->clear();
    auto& m = *impl_->model;
    // Images go through the engine in batches no larger than the bundle's largest batch size.
    size_t chunk = 1;
    for (int b : impl_->info.batch_sizes) chunk = std::max(chunk, static_cast<size_t>(b));
    for (size_t start = 0; start < images.size(); start += chunk) {
      std::vector<Image> decoded;
      for (size_t i = start; i < std::min(images.size(), start + chunk); ++i) {
        const auto& v = images[i];
        KILN_CHECK(v.rgb, "[classify] image {} has no pixels", i);
        check_sides(v.width, v.height, fmt::format("image {}", i));
        decoded.push_back(
            {v.width, v.height, std::vector<uint8_t>(v.rgb, v.rgb + static_cast<size_t>(v.width) * v.height * 3)});
      }
      std::vector<const Image*> ptrs;
      for (const auto& d : decoded) ptrs.push_back(&d);
      auto logits = m.classify(ptrs);
      for (size_t i = 0; i < decoded.size(); ++i)
        out->push_back(to_result(logits.data() + i * m.num_classes(), m.num_classes(), top_k, m.labels()));
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

Status Classifier::classify_files(const std::vector<std::string>& paths, int top_k, std::vector<Classification>* out) {
  try {
    std::vector<Image> images;
    for (const auto& p : paths) {
      images.push_back(load_image(p));
      check_sides(images.back().width, images.back().height, p);
    }
    std::vector<ImageView> views;
    for (const auto& i : images) views.push_back({i.width, i.height, i.rgb.data()});
    return classify_images(views, top_k, out);
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

Status Classifier::run(const float* input, int batch, std::vector<float>* logits) {
  try {
    KILN_CHECK(input && batch >= 1, "[classify] run needs input and a batch of at least 1");
    logits->resize(static_cast<size_t>(batch) * impl_->model->num_classes());
    impl_->model->run(input, batch, logits->data());
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

}  // namespace kiln
