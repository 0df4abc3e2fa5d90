// Image classifiers (task image_classification): encoded images (JPEG, PNG, WebP) as a BYTES
// input "image", preprocessed as the bundle says, or already preprocessed NCHW floats as "pixels";
// outputs "logits" and their softmax "probabilities", both of which the classification extension
// turns into labelled top-k strings.
#include <cmath>

#include "core/error.h"
#include "serve/servable.h"

namespace kiln::serve {
namespace {

class ClassifierServable : public Servable {
 public:
  ClassifierServable(const std::string& path, const ServableOptions& options) : max_pixels_(options.max_image_pixels) {
    Status s = Classifier::load(path, &model_, options.device);
    KILN_CHECK(s.ok(), "{}", s.message());
  }

  std::string platform() const override { return "kiln_image_classification"; }
  const ModelInfo& info() const override { return model_->info(); }
  const std::vector<std::string>& labels() const override { return model_->labels(); }

  std::vector<TensorMetadata> inputs() const override {
    const ModelInfo& i = info();
    return {{"image", "BYTES", {-1}}, {"pixels", "FP32", {-1, i.channels, i.height, i.width}}};
  }
  std::vector<TensorMetadata> outputs() const override {
    int64_t n = info().num_classes;
    return {{"logits", "FP32", {-1, n}}, {"probabilities", "FP32", {-1, n}}};
  }

  // One of the two inputs: encoded images or pixels.
  Admission admit(const InferRequest& r) const override {
    if (r.inputs.size() != 1) bad_request("give one input: 'image' (encoded images) or 'pixels' (NCHW floats)");
    if (r.input("image")) return {bytes_batch(r, "image"), "image", true};
    const InferTensor* p = r.input("pixels");
    if (!p) bad_request("the request has no input 'image' or 'pixels'");
    const ModelInfo& i = info();
    std::vector<int64_t> want = {p->shape.empty() ? 0 : p->shape[0], i.channels, i.height, i.width};
    if (p->datatype != "FP32" || p->shape != want || p->shape[0] < 1)
      bad_request(fmt::format("input 'pixels' must be FP32 of [batch, {}, {}, {}]", i.channels, i.height, i.width));
    return {p->shape[0], "pixels", true};
  }

  std::vector<RunResult> run(const std::vector<const InferRequest*>& batch) override {
    std::vector<RunResult> results(batch.size());
    std::vector<float> logits;
    std::vector<size_t> ran;  // requests that reached the model, in batch order
    int64_t rows = 0;
    if (batch[0]->input("pixels")) {
      std::vector<float> pixels;
      for (size_t i = 0; i < batch.size(); ++i) {
        const InferTensor& p = *batch[i]->input("pixels");
        const float* f = reinterpret_cast<const float*>(p.data.data());
        pixels.insert(pixels.end(), f, f + p.data.size() / sizeof(float));
        rows += p.shape[0];
        ran.push_back(i);
      }
      check(model_->run(pixels.data(), static_cast<int>(rows), &logits));
    } else {
      // Decode each request's images; one that fails fails its request only.
      std::vector<Image> images;
      for (size_t i = 0; i < batch.size(); ++i) {
        std::vector<Image> mine;
        try {
          mine = decode_images(*batch[i]->input("image"), max_pixels_);
        } catch (const std::exception& e) {
          results[i].error = e.what();
          continue;
        }
        for (auto& m : mine) images.push_back(std::move(m));
        ran.push_back(i);
      }
      std::vector<ImageView> views;
      for (const auto& im : images) views.push_back({im.width, im.height, im.rgb.data()});
      std::vector<Classification> out;
      if (!views.empty()) check(model_->classify_images(views, 1, &out));
      for (const auto& c : out) logits.insert(logits.end(), c.logits.begin(), c.logits.end());
      rows = static_cast<int64_t>(views.size());
    }
    int64_t n = info().num_classes, row = 0;
    std::vector<float> probs = softmax_rows(logits, n);
    for (size_t i : ran) {
      int64_t b = batch[i]->inputs[0].shape[0];
      results[i].outputs.push_back(fp32_tensor("logits", {b, n}, logits.data() + row * n));
      results[i].outputs.push_back(fp32_tensor("probabilities", {b, n}, probs.data() + row * n));
      row += b;
    }
    return results;
  }

 private:
  static void check(const Status& s) {
    if (!s.ok()) throw ServeError(ErrorKind::Internal, s.message());
  }

  static std::vector<float> softmax_rows(const std::vector<float>& logits, int64_t n) {
    std::vector<float> p(logits.size());
    for (size_t r = 0; n > 0 && r < logits.size() / n; ++r) {
      const float* x = logits.data() + r * n;
      float m = x[0];
      for (int64_t c = 1; c < n; ++c) m = std::max(m, x[c]);
      double sum = 0;
      for (int64_t c = 0; c < n; ++c) sum += std::exp(static_cast<double>(x[c]) - m);
      for (int64_t c = 0; c < n; ++c) p[r * n + c] = static_cast<float>(std::exp(static_cast<double>(x[c]) - m) / sum);
    }
    return p;
  }

  std::unique_ptr<Classifier> model_;
  uint64_t max_pixels_;
};

}  // namespace

std::unique_ptr<Servable> make_classifier_servable(const std::string& path, const ServableOptions& options) {
  return std::make_unique<ClassifierServable>(path, options);
}

}  // namespace kiln::serve
