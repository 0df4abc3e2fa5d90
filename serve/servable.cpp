#include "serve/servable.h"

#include <fmt/format.h>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <span>

#include "bundle/bundle.h"
#include "core/error.h"

namespace kiln::serve {

const std::vector<std::string>& Servable::labels() const {
  static const std::vector<std::string> none;
  return none;
}

std::unique_ptr<Servable> load_servable(const std::string& bundle_path, const ServableOptions& options) {
  std::string task = Bundle::open(bundle_path)->manifest().at("task").value("type", "");
  if (task == "image_classification") return make_classifier_servable(bundle_path, options);
  if (task == "object_detection") return make_detector_servable(bundle_path, options);
  if (task == "translation" || task == "summarization") return make_text_servable(bundle_path, options);
  return make_tensor_servable(bundle_path, options);
}

namespace {

// "value:index[:label]" strings of the best k entries of each row, as Triton's extension writes them.
InferTensor classify_output(const InferTensor& t, int k, const std::vector<std::string>& labels) {
  if (t.datatype != "FP32" || t.shape.empty() || t.shape.size() > 2)
    bad_request("output '" + t.name + "' is not a vector or a batch of vectors of FP32 scores to classify");
  int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, n = t.shape.back();
  int64_t top = std::min<int64_t>(k, n);
  std::vector<std::string> out;
  std::vector<float> row(n);
  std::vector<int64_t> order(n);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(row.data(), t.data.data() + r * n * sizeof(float), n * sizeof(float));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [&](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (int64_t i = 0; i < top; ++i) {
      int64_t c = order[i];
      std::string s = fmt::format("{}:{}", row[c], c);
      if (c < static_cast<int64_t>(labels.size())) s += ":" + labels[c];
      out.push_back(std::move(s));
    }
  }
  std::vector<int64_t> shape = t.shape.size() == 2 ? std::vector<int64_t>{rows, top} : std::vector<int64_t>{top};
  return bytes_tensor(t.name, shape, std::move(out));
}

}  // namespace

std::vector<InferTensor> select_outputs(std::vector<InferTensor> outputs, const InferRequest& request,
                                        const std::vector<std::string>& labels) {
  if (request.outputs.empty()) return outputs;
  std::vector<InferTensor> selected;
  for (const auto& want : request.outputs) {
    auto it = std::find_if(outputs.begin(), outputs.end(), [&](const InferTensor& t) { return t.name == want.name; });
    if (it == outputs.end()) bad_request("the model has no output '" + want.name + "'");
    selected.push_back(want.classification ? classify_output(*it, want.classification, labels) : std::move(*it));
  }
  return selected;
}

std::string datatype_of(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "FP32";
    case DType::F16:
      return "FP16";
    case DType::BF16:
      return "BF16";
    case DType::I32:
      return "INT32";
    case DType::I64:
      return "INT64";
    case DType::Bool:
      return "BOOL";
    case DType::F8E4M3:
      break;
  }
  return "FP8_E4M3";  // no protocol datatype: requests with it are refused by name
}

int64_t bytes_batch(const InferRequest& request, const std::string& name) {
  const InferTensor* t = request.input(name);
  if (!t) bad_request("the request has no input '" + name + "'");
  if (t->datatype != "BYTES") bad_request("input '" + name + "' must be BYTES, not " + t->datatype);
  bool vector = t->shape.size() == 1 || (t->shape.size() == 2 && t->shape[1] == 1);
  if (!vector || t->shape[0] < 1) bad_request("input '" + name + "' must have the shape [batch] with batch >= 1");
  return t->shape[0];
}

double number_parameter(const InferRequest& request, const std::string& name, double fallback) {
  auto it = request.parameters.find(name);
  if (it == request.parameters.end()) return fallback;
  if (!it->is_number()) bad_request("parameter '" + name + "' must be a number");
  return it->get<double>();
}

bool bool_parameter(const InferRequest& request, const std::string& name, bool fallback) {
  auto it = request.parameters.find(name);
  if (it == request.parameters.end()) return fallback;
  if (!it->is_boolean()) bad_request("parameter '" + name + "' must be true or false");
  return it->get<bool>();
}

InferTensor fp32_tensor(std::string name, std::vector<int64_t> shape, const float* values) {
  InferTensor t{std::move(name), "FP32", std::move(shape), {}, {}, nlohmann::json::object()};
  size_t n = std::accumulate(t.shape.begin(), t.shape.end(), size_t{1}, std::multiplies<>());
  t.data.resize(n * sizeof(float));
  if (n) std::memcpy(t.data.data(), values, n * sizeof(float));
  return t;
}

InferTensor int32_tensor(std::string name, std::vector<int64_t> shape, const std::vector<int32_t>& values) {
  InferTensor t{std::move(name), "INT32", std::move(shape), {}, {}, nlohmann::json::object()};
  t.data.resize(values.size() * sizeof(int32_t));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

InferTensor bytes_tensor(std::string name, std::vector<int64_t> shape, std::vector<std::string> values) {
  return InferTensor{std::move(name), "BYTES", std::move(shape), {}, std::move(values), nlohmann::json::object()};
}

Image decode_encoded_image(std::string_view bytes, size_t index, uint64_t max_pixels) {
  try {
    return decode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                        "image " + std::to_string(index), false, max_pixels);
  } catch (const Error& e) {
    bad_request(e.what());
  }
}

std::vector<Image> decode_images(const InferTensor& images, uint64_t max_pixels) {
  std::vector<Image> out;
  uint64_t left = max_pixels;
  for (size_t k = 0; k < images.strings.size(); ++k) {
    out.push_back(decode_encoded_image(images.strings[k], k, left));
    left -= static_cast<uint64_t>(out.back().width) * out.back().height;
  }
  return out;
}

}  // namespace kiln::serve
