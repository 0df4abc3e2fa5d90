// Object detectors (task object_detection): encoded images as a BYTES input "image"; the request
// parameters "conf", "max_det" and "square" as `kiln detect` takes them. Images differ in how many
// objects they hold, so each output is padded to the most any image of the request has: "boxes"
// [batch, n, 4] (x1, y1, x2, y2 in the image's pixels), "scores" and "classes" [batch, n] (-1 for
// padding), "labels" BYTES [batch, n], "counts" INT32 [batch].
#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "serve/servable.h"

namespace kiln::serve {
namespace {

class DetectorServable : public Servable {
 public:
  DetectorServable(const std::string& path, const ServableOptions& options) : max_pixels_(options.max_image_pixels) {
    Status s = Detector::load(path, &model_, options.device);
    KILN_CHECK(s.ok(), "{}", s.message());
  }

  std::string platform() const override { return "kiln_object_detection"; }
  const ModelInfo& info() const override { return model_->info(); }
  const std::vector<std::string>& labels() const override { return model_->labels(); }
  std::vector<TensorMetadata> inputs() const override { return {{"image", "BYTES", {-1}}}; }
  std::vector<TensorMetadata> outputs() const override {
    return {{"boxes", "FP32", {-1, -1, 4}},
            {"scores", "FP32", {-1, -1}},
            {"classes", "INT32", {-1, -1}},
            {"labels", "BYTES", {-1, -1}},
            {"counts", "INT32", {-1}}};
  }

  // Decodes the images here, in the client's thread.
  Admission admit(const InferRequest& r) const override {
    if (r.inputs.size() != 1) bad_request("give one input: 'image' (encoded images)");
    int64_t batch = bytes_batch(r, "image");
    DetectionOptions o = options(r);
    auto images = std::make_shared<const std::vector<Image>>(decode_images(*r.input("image"), max_pixels_));
    return {batch, fmt::format("{}/{}/{}", o.conf, o.max_det, o.square), true, images};
  }

  std::vector<std::vector<InferTensor>> run(const std::vector<Work>& batch) override {
    std::vector<ImageView> views;
    for (const Work& w : batch)
      for (const Image& im : *std::any_cast<std::shared_ptr<const std::vector<Image>>>(w.admission->prepared))
        views.push_back({im.width, im.height, im.rgb.data()});
    std::vector<std::vector<DetectedObject>> found;
    Status s = model_->detect_images(views, options(*batch[0].request), &found);
    if (!s.ok()) throw ServeError(ErrorKind::Internal, s.message());
    std::vector<std::vector<InferTensor>> results;
    size_t next = 0;
    for (const Work& w : batch) {
      int64_t b = w.admission->batch, n = 0;
      for (int64_t k = 0; k < b; ++k) n = std::max<int64_t>(n, found[next + k].size());
      std::vector<float> boxes(b * n * 4, 0.f), scores(b * n, 0.f);
      std::vector<int32_t> classes(b * n, -1), counts;
      std::vector<std::string> labels(b * n);
      for (int64_t k = 0; k < b; ++k) {
        const auto& objects = found[next + k];
        counts.push_back(static_cast<int32_t>(objects.size()));
        for (size_t j = 0; j < objects.size(); ++j) {
          const DetectedObject& d = objects[j];
          float* box = &boxes[(k * n + j) * 4];
          box[0] = d.x1, box[1] = d.y1, box[2] = d.x2, box[3] = d.y2;
          scores[k * n + j] = d.score;
          classes[k * n + j] = d.class_id;
          labels[k * n + j] = d.label;
        }
      }
      next += b;
      results.push_back({fp32_tensor("boxes", {b, n, 4}, boxes.data()), fp32_tensor("scores", {b, n}, scores.data()),
                         int32_tensor("classes", {b, n}, classes), bytes_tensor("labels", {b, n}, std::move(labels)),
                         int32_tensor("counts", {b}, counts)});
    }
    return results;
  }

 private:
  static DetectionOptions options(const InferRequest& r) {
    DetectionOptions o;
    o.conf = static_cast<float>(number_parameter(r, "conf", o.conf));
    double max_det = number_parameter(r, "max_det", o.max_det);
    if (!(o.conf >= 0 && o.conf <= 1)) bad_request("parameter 'conf' must be between 0 and 1");
    if (!(max_det >= 1 && max_det <= 10000) || max_det != std::floor(max_det))
      bad_request("parameter 'max_det' must be an integer from 1 to 10000");
    o.max_det = static_cast<int>(max_det);
    o.square = bool_parameter(r, "square", o.square);
    return o;
  }

  std::unique_ptr<Detector> model_;
  uint64_t max_pixels_;
};

}  // namespace

std::unique_ptr<Servable> make_detector_servable(const std::string& path, const ServableOptions& options) {
  return std::make_unique<DetectorServable>(path, options);
}

}  // namespace kiln::serve
