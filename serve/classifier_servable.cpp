// Image classifiers (task image_classification): encoded images (JPEG, PNG, WebP) as a BYTES
// input "image", preprocessed as the bundle says, or already preprocessed NCHW floats as "pixels";
// outputs "logits" and their softmax "probabilities", both of which the classification extension
// turns into labelled top-k strings. Images are decoded and preprocessed while admitting, in the
// clients' threads; the batch's thread only runs the network (the same preprocessing and engine
// call as kiln::Classifier, so a batch's logits are its logits bit for bit).
#include <algorithm>

#include "api/model_info.h"
#include "bundle/bundle.h"
#include "core/error.h"
#include "serve/servable.h"
#include "tasks/classification/classifier.h"
#include "tasks/classification/preprocess.h"

namespace kiln::serve {
namespace {

class ClassifierServable : public Servable {
 public:
  ClassifierServable(const std::string& path, const ServableOptions& options) : max_pixels_(options.max_image_pixels) {
    auto bundle = Bundle::open(path);
    model_ = std::make_unique<classification::ImageClassifier>(bundle, options.device);
    const auto& pre = model_->preprocess_config();
    info_ = bundle_model_info(*bundle, model_->engine().device());
    info_.channels = pre.channels;
    info_.height = pre.height;
    info_.width = pre.width;
    info_.num_classes = model_->num_classes();
  }

  std::string platform() const override { return "kiln_image_classification"; }
  const ModelInfo& info() const override { return info_; }
  const std::vector<std::string>& labels() const override { return model_->labels(); }

  std::vector<TensorMetadata> inputs() const override {
    return {{"image", "BYTES", {-1}}, {"pixels", "FP32", {-1, info_.channels, info_.height, info_.width}}};
  }
  std::vector<TensorMetadata> outputs() const override {
    int64_t n = info_.num_classes;
    return {{"logits", "FP32", {-1, n}}, {"probabilities", "FP32", {-1, n}}};
  }

  // One of the two inputs: encoded images (decoded and preprocessed here) or pixels.
  Admission admit(const InferRequest& r) const override {
    if (r.inputs.size() != 1) bad_request("give one input: 'image' (encoded images) or 'pixels' (NCHW floats)");
    const size_t per_image = static_cast<size_t>(info_.channels) * info_.height * info_.width;
    if (r.input("image")) {
      Admission a{bytes_batch(r, "image"), "", true, {}};
      // One image decoded at a time: each may hold max_pixels, not all of them together.
      const InferTensor& encoded = *r.input("image");
      std::vector<float> pixels(per_image * a.batch);
      for (size_t i = 0; i < encoded.strings.size(); ++i)
        classification::preprocess(decode_encoded_image(encoded.strings[i], i, max_pixels_),
                                   model_->preprocess_config(), pixels.data() + i * per_image);
      a.prepared = std::make_shared<const std::vector<float>>(std::move(pixels));
      return a;
    }
    const InferTensor* p = r.input("pixels");
    if (!p) bad_request("the request has no input 'image' or 'pixels'");
    std::vector<int64_t> want = {p->shape.empty() ? 0 : p->shape[0], info_.channels, info_.height, info_.width};
    if (p->datatype != "FP32" || p->shape != want || p->shape[0] < 1)
      bad_request(
          fmt::format("input 'pixels' must be FP32 of [batch, {}, {}, {}]", info_.channels, info_.height, info_.width));
    return {p->shape[0], "", true, {}};
  }

  std::vector<std::vector<InferTensor>> run(const std::vector<Work>& batch) override {
    int64_t rows = 0;
    for (const Work& w : batch) rows += w.admission->batch;
    // Each request's pixels copied once, into the buffer the engine reads.
    float* pixels = model_->input_for(static_cast<int>(rows));
    for (const Work& w : batch) {
      const float* from = nullptr;
      if (w.admission->prepared.has_value())
        from = std::any_cast<std::shared_ptr<const std::vector<float>>>(w.admission->prepared)->data();
      else
        from = reinterpret_cast<const float*>(w.request->input("pixels")->data.data());
      const int64_t count = w.admission->batch * info_.channels * info_.height * info_.width;
      pixels = std::copy(from, from + count, pixels);
    }
    const int64_t n = info_.num_classes;
    std::vector<float> logits(rows * n);
    model_->run_input(static_cast<int>(rows), logits.data());
    std::vector<float> probs;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> p = classification::softmax(logits.data() + r * n, static_cast<int>(n));
      probs.insert(probs.end(), p.begin(), p.end());
    }
    std::vector<std::vector<InferTensor>> results;
    int64_t row = 0;
    for (const Work& w : batch) {
      int64_t b = w.admission->batch;
      results.push_back({fp32_tensor("logits", {b, n}, logits.data() + row * n),
                         fp32_tensor("probabilities", {b, n}, probs.data() + row * n)});
      row += b;
    }
    return results;
  }

 private:
  std::unique_ptr<classification::ImageClassifier> model_;
  ModelInfo info_;
  uint64_t max_pixels_;
};

}  // namespace

std::unique_ptr<Servable> make_classifier_servable(const std::string& path, const ServableOptions& options) {
  return std::make_unique<ClassifierServable>(path, options);
}

}  // namespace kiln::serve
