#include "tasks/classification/classifier.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kiln::classification {

std::vector<Scored> top_k(const float* logits, int classes, int k) {
  double max = logits[0];
  for (int i = 1; i < classes; ++i) max = std::max(max, static_cast<double>(logits[i]));
  double sum = 0;
  std::vector<double> e(classes);
  for (int i = 0; i < classes; ++i) sum += e[i] = std::exp(logits[i] - max);
  std::vector<int> idx(classes);
  for (int i = 0; i < classes; ++i) idx[i] = i;
  k = std::clamp(k, 0, classes);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int a, int b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
  std::vector<Scored> out;
  for (int i = 0; i < k; ++i) out.push_back({idx[i], static_cast<float>(e[idx[i]] / sum)});
  return out;
}

ImageClassifier::ImageClassifier(std::shared_ptr<const Bundle> bundle, const std::string& device)
    : bundle_(std::move(bundle)),
      engine_(make_engine(device, bundle_->graph(), bundle_->weights(),
                          bundle_->manifest().value("plans", nlohmann::json::object()))) {
  const auto& m = bundle_->manifest();
  try {
    const auto& task = m.at("task");
    KILN_CHECK(task.at("type").get<std::string>() == "image_classification", "[classify] {} is not an image classifier",
               bundle_->path());
    pre_ = PreprocessConfig::from_json(task.at("preprocess"));
    labels_ = task.at("labels").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    fail("[classify] {}: malformed task section: {}", bundle_->path(), e.what());
  }
  int classes = engine_->output_elements(pre_.height, pre_.width);
  KILN_CHECK(static_cast<int>(labels_.size()) == classes, "[classify] {}: {} labels for {} classes", bundle_->path(),
             labels_.size(), classes);
}

void ImageClassifier::run(const float* input, int batch, float* logits) {
  engine_->run(input, batch, pre_.height, pre_.width, logits);
}

std::vector<float> ImageClassifier::classify(const std::vector<const Image*>& images) {
  const size_t per_image = static_cast<size_t>(pre_.channels) * pre_.height * pre_.width;
  std::vector<float> input(per_image * images.size());
  for (size_t i = 0; i < images.size(); ++i) preprocess(*images[i], pre_, input.data() + i * per_image);
  std::vector<float> logits(images.size() * num_classes());
  run(input.data(), static_cast<int>(images.size()), logits.data());
  return logits;
}

}  // namespace kiln::classification
