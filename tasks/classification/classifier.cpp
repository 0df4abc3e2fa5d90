#include "tasks/classification/classifier.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace kiln::classification {

std::vector<float> softmax(const float* logits, int classes) {
  double max = logits[0];
  for (int i = 1; i < classes; ++i) max = std::max(max, static_cast<double>(logits[i]));
  double sum = 0;
  std::vector<double> e(classes);
  for (int i = 0; i < classes; ++i) sum += e[i] = std::exp(logits[i] - max);
  std::vector<float> p(classes);
  for (int i = 0; i < classes; ++i) p[i] = static_cast<float>(e[i] / sum);
  return p;
}

std::vector<Scored> top_k(const float* logits, int classes, int k) {
  const std::vector<float> p = softmax(logits, classes);
  std::vector<int> idx(classes);
  for (int i = 0; i < classes; ++i) idx[i] = i;
  k = std::clamp(k, 0, classes);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int a, int b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
  std::vector<Scored> out;
  for (int i = 0; i < k; ++i) out.push_back({idx[i], p[idx[i]]});
  return out;
}

ImageClassifier::ImageClassifier(std::shared_ptr<const Bundle> bundle, const std::string& device)
    : bundle_(std::move(bundle)) {
  const auto& task = bundle_->manifest().at("task");
  try {
    KILN_CHECK(task.at("type").get<std::string>() == "image_classification", "[classify] {} is not an image classifier",
               bundle_->path());
    pre_ = PreprocessConfig::from_json(task.at("preprocess"));
    labels_ = task.at("labels").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    fail("[classify] {}: malformed task section: {}", bundle_->path(), e.what());
  }
  const Graph& g = bundle_->graph(bundle_->main_graph());
  const auto inputs = g.inputs();
  const auto pixels = g.find_value("pixels");
  KILN_CHECK(inputs.size() == 1 && pixels && g.find_output("logits"),
             "[classify] {}: the graph must take one input 'pixels' and give 'logits'", bundle_->path());
  const ShapeSpec& spec = g.values()[*pixels].shape;
  const bool fits = spec.size() == 4 && spec[0].is_symbol() && spec[1] == Dim{pre_.channels, {}} &&
                    spec[2] == Dim{pre_.height, {}} && spec[3] == Dim{pre_.width, {}};
  KILN_CHECK(fits, "[classify] {}: input 'pixels' {} does not match the preprocessing's {}x{}x{}", bundle_->path(),
             to_string(spec), pre_.channels, pre_.height, pre_.width);
  batch_symbol_ = spec[0].symbol;
  const auto shapes = g.infer_shapes(bindings(1));
  const Shape& logits = shapes[g.outputs()[*g.find_output("logits")].value];
  KILN_CHECK(logits.size() == 2 && logits[1] == static_cast<int64_t>(labels_.size()),
             "[classify] {}: {} labels for logits {}", bundle_->path(), labels_.size(), to_string(logits));
  engine_ = std::make_unique<Engine>(g, bundle_->constants(), bundle_->engine_options(device));
}

Bindings ImageClassifier::bindings(int batch) const { return {{batch_symbol_, batch}}; }

// The input buffer is kept between calls (a batch of 32 is 19 MB: a fresh one would be
// allocated, faulted in and zeroed each time) and handed over, not copied into a list.
float* ImageClassifier::input_for(int batch) {
  KILN_CHECK(batch >= 1, "[classify] batch must be at least 1");
  HostTensor& pixels = input_[0];
  pixels.shape = {batch, pre_.channels, pre_.height, pre_.width};
  pixels.data.resize(static_cast<size_t>(pixels.numel()) * sizeof(float));
  return reinterpret_cast<float*>(pixels.data.data());
}

void ImageClassifier::run_input(int batch, float* logits) {
  KILN_CHECK(!input_[0].shape.empty() && input_[0].shape[0] == batch, "[classify] run_input({}) without input_for({})",
             batch, batch);
  const auto out = engine_->run(input_);
  std::memcpy(logits, out[0].data.data(), out[0].data.size());
}

void ImageClassifier::run(const float* input, int batch, float* logits) {
  float* in = input_for(batch);
  std::memcpy(in, input, input_[0].data.size());
  run_input(batch, logits);
}

std::vector<float> ImageClassifier::classify(const std::vector<const Image*>& images) {
  const size_t per_image = static_cast<size_t>(pre_.channels) * pre_.height * pre_.width;
  float* input = input_for(static_cast<int>(images.size()));
  for (size_t i = 0; i < images.size(); ++i) preprocess(*images[i], pre_, input + i * per_image);
  std::vector<float> logits(images.size() * num_classes());
  run_input(static_cast<int>(images.size()), logits.data());
  return logits;
}

}  // namespace kiln::classification
