#include "tasks/detection/detector.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "core/checked_math.h"
#include "core/error.h"

namespace kiln::detection {

namespace {

// Adds the seconds since `start` to `total` and restarts the clock.
void lap(std::chrono::steady_clock::time_point& start, double& total) {
  const auto now = std::chrono::steady_clock::now();
  total += std::chrono::duration<double>(now - start).count();
  start = now;
}

}  // namespace

std::vector<float> anchor_grid(int width, int height, const std::vector<int>& strides) {
  std::vector<float> a;
  for (int s : strides) {
    KILN_CHECK(s > 0 && width % s == 0 && height % s == 0, "[detect] input {}x{} is not a multiple of stride {}", width,
               height, s);
    for (int y = 0; y < height / s; ++y)
      for (int x = 0; x < width / s; ++x) {
        a.push_back(static_cast<float>(x) + 0.5f);
        a.push_back(static_cast<float>(y) + 0.5f);
        a.push_back(static_cast<float>(s));
      }
  }
  return a;
}

Detector::Detector(std::shared_ptr<const Bundle> bundle, const std::string& device) : bundle_(std::move(bundle)) {
  const auto& task = bundle_->manifest().at("task");
  try {
    KILN_CHECK(task.at("type").get<std::string>() == "object_detection", "[detect] {} is not an object detector",
               bundle_->path());
    const auto& pre = task.at("preprocess");
    letterbox_.imgsz = pre.at("imgsz").get<int>();
    letterbox_.stride = pre.at("stride").get<int>();
    letterbox_.pad_value = pre.at("pad_value").get<int>();
    strides_ = task.at("strides").get<std::vector<int>>();
    labels_ = task.at("labels").get<std::vector<std::string>>();
    max_det_ = task.at("max_det").get<int>();
  } catch (const nlohmann::json::exception& e) {
    fail("[detect] {}: malformed task section: {}", bundle_->path(), e.what());
  }
  KILN_CHECK(letterbox_.pad_value >= 0 && letterbox_.pad_value <= 255 && !strides_.empty() && max_det_ >= 1 &&
                 !labels_.empty(),
             "[detect] {}: bad detection settings", bundle_->path());
  for (int s : strides_)
    KILN_CHECK(s >= 1 && letterbox_.stride % s == 0, "[detect] {}: head stride {} does not divide the input stride {}",
               bundle_->path(), s, letterbox_.stride);
  letterbox_shape(1, 1, letterbox_);  // checks imgsz against the stride
  const Graph& g = bundle_->graph(bundle_->main_graph());
  for (const char* in : {"pixels", "anchors"})
    KILN_CHECK(g.find_value(in), "[detect] {}: the graph has no input '{}'", bundle_->path(), in);
  for (const char* out : {"boxes", "scores", "classes"})
    KILN_CHECK(g.find_output(out), "[detect] {}: the graph has no output '{}'", bundle_->path(), out);
  engine_ = std::make_unique<Engine>(g, bundle_->constants(), bundle_->engine_options(device));
}

Detector::Raw Detector::run(const std::vector<const Image*>& images) {
  auto clock = std::chrono::steady_clock::now();
  KILN_CHECK(!images.empty(), "[detect] no image");
  const int w = images[0]->width, h = images[0]->height, batch = static_cast<int>(images.size());
  for (const Image* im : images) KILN_CHECK(im->width == w && im->height == h, "[detect] a batch mixes input sizes");
  const std::vector<float> grid = anchor_grid(w, h, strides_);
  const int64_t anchors = static_cast<int64_t>(grid.size() / 3);
  KILN_CHECK(anchors >= max_det_,
             "[detect] a {}x{} input has {} anchors, fewer than the head's {} detections: use a larger --imgsz", w, h,
             anchors, max_det_);
  // The inputs' buffers are kept between calls (a 640x640 image is 4.9 MB of floats) and handed
  // to the engine, not copied into a list.
  HostTensor& pixels = inputs_[0];
  pixels.shape = {batch, 3, h, w};
  pixels.data.resize(static_cast<size_t>(pixels.numel()) * sizeof(float));
  float* p = pixels.as<float>();
  const size_t plane = checked_mul(static_cast<uint64_t>(w), static_cast<uint64_t>(h), "[detect] image");
  for (int b = 0; b < batch; ++b) {
    const uint8_t* rgb = images[b]->rgb.data();
    float* dst = p + static_cast<size_t>(b) * 3 * plane;
    // x / 255 in float, as the predictor divides its float tensor.
    for (size_t i = 0; i < plane; ++i)
      for (int c = 0; c < 3; ++c) dst[c * plane + i] = static_cast<float>(rgb[3 * i + c]) / 255.0f;
  }
  inputs_[1] = HostTensor::from_f32("anchors", {anchors, 3}, grid);
  lap(clock, seconds_.preprocess);
  const auto out = engine_->run(inputs_);
  lap(clock, seconds_.inference);
  const Graph& g = bundle_->graph(bundle_->main_graph());
  auto output = [&](const char* name) -> const HostTensor& { return out.at(*g.find_output(name)); };
  Raw r;
  r.boxes = output("boxes").to_f32();
  r.scores = output("scores").to_f32();
  const HostTensor& classes = output("classes");
  KILN_CHECK(classes.dtype == DType::I64, "[detect] classes must be i64");
  r.classes.assign(classes.as<int64_t>(), classes.as<int64_t>() + classes.numel());
  r.k = static_cast<int>(r.scores.size() / batch);
  KILN_CHECK(r.boxes.size() == r.scores.size() * 4 && r.classes.size() == r.scores.size(),
             "[detect] the head's outputs disagree in size");
  lap(clock, seconds_.postprocess);
  return r;
}

std::vector<std::vector<Detection>> Detector::detect(const std::vector<const Image*>& images,
                                                     const DetectOptions& options) {
  LetterboxConfig lb = letterbox_;
  if (options.imgsz > 0) lb.imgsz = options.imgsz;
  lb.square = options.square;
  KILN_CHECK(options.max_det >= 1, "[detect] --max-det must be at least 1");
  auto clock = std::chrono::steady_clock::now();
  std::vector<Image> inputs;
  inputs.reserve(images.size());
  for (const Image* im : images) inputs.push_back(letterbox(*im, lb));
  lap(clock, seconds_.preprocess);
  // Images of one letterboxed shape run together.
  std::map<std::pair<int, int>, std::vector<size_t>> by_shape;
  for (size_t i = 0; i < inputs.size(); ++i) by_shape[{inputs[i].width, inputs[i].height}].push_back(i);
  std::vector<std::vector<Detection>> result(images.size());
  for (const auto& [shape, members] : by_shape) {
    std::vector<const Image*> batch;
    for (size_t i : members) batch.push_back(&inputs[i]);
    Raw raw = run(batch);
    clock = std::chrono::steady_clock::now();
    for (size_t j = 0; j < members.size(); ++j) {
      const size_t i = members[j];
      float* boxes = raw.boxes.data() + j * raw.k * 4;
      scale_boxes_back(boxes, raw.k, shape.first, shape.second, images[i]->width, images[i]->height);
      for (int d = 0; d < raw.k && static_cast<int>(result[i].size()) < options.max_det; ++d) {
        const float score = raw.scores[j * raw.k + d];
        if (!(score > options.conf)) continue;
        const int64_t cls = raw.classes[j * raw.k + d];
        KILN_CHECK(cls >= 0 && cls < static_cast<int64_t>(labels_.size()), "[detect] class {} out of range", cls);
        const float* b = boxes + 4 * d;
        result[i].push_back({b[0], b[1], b[2], b[3], score, static_cast<int>(cls)});
      }
    }
    lap(clock, seconds_.postprocess);
  }
  return result;
}

}  // namespace kiln::detection
