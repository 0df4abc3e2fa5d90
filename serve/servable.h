// A loaded bundle behind the Open Inference Protocol: what it takes and returns, which requests
// may share a batch, and how a batch runs. One implementation per task (tensor_servable.cpp for
// any bundle, classifier_, detector_ and text_servable.cpp); load_servable picks by the bundle's
// task. An instance is used by one thread at a time (the batcher gives each instance its own).
#pragma once

#include <any>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/kiln.h"
#include "serve/infer.h"
#include "tasks/image/image.h"

namespace kiln::serve {

// An input or output in model metadata; -1 marks a size each request chooses.
struct TensorMetadata {
  std::string name, datatype;
  std::vector<int64_t> shape;
};

// What admitting a request found: how many batch items it holds, and a key: requests with the
// same key may run as one batch (same non-batch sizes, same task parameters). A request that is
// not batchable (a graph without a batch dimension) always runs alone. `prepared` holds work done
// while admitting, in the client's thread, so that it runs in parallel across requests rather
// than in the batch's one thread (images decoded and preprocessed).
struct Admission {
  int64_t batch = 1;
  std::string key;
  bool batchable = true;
  std::any prepared;
};

// One request of a batch, with what admitting it found.
struct Work {
  const InferRequest* request;
  const Admission* admission;
};

class Servable {
 public:
  virtual ~Servable() = default;
  virtual std::string platform() const = 0;  // "kiln_image_classification", ...
  virtual std::vector<TensorMetadata> inputs() const = 0;
  virtual std::vector<TensorMetadata> outputs() const = 0;
  // Class names for the classification extension (empty: indices only).
  virtual const std::vector<std::string>& labels() const;
  // The model's description (bundle manifest fields, device).
  virtual const ModelInfo& info() const = 0;
  // Whether every input's first dimension is the batch (then a request's batch size is known
  // before admitting it, and an oversized one is refused before any work).
  virtual bool leads_with_batch() const { return true; }
  // Checks a request against the model and prepares it; throws ServeError(BadRequest) naming
  // what is wrong. Called from many threads at once.
  virtual Admission admit(const InferRequest& request) const = 0;
  // Runs admitted requests that share a key as one batch; each request's outputs, in order.
  virtual std::vector<std::vector<InferTensor>> run(const std::vector<Work>& batch) = 0;
};

struct ServableOptions {
  std::string device = "auto";             // "cpu", "cuda" or "auto"
  uint64_t max_image_pixels = 40'000'000;  // pixels of an image (of a request's images, for detection)
};

// Loads a bundle as its task's servable. Throws kiln::Error.
std::unique_ptr<Servable> load_servable(const std::string& bundle_path, const ServableOptions& options);

// The requested outputs of a run, in the request's order (every output when it names none), with
// the classification extension applied: an FP32 output of [batch, classes] (or [classes]) asked
// for with classification k becomes BYTES [batch, k] of "value:index[:label]", best first.
std::vector<InferTensor> select_outputs(std::vector<InferTensor> outputs, const InferRequest& request,
                                        const std::vector<std::string>& labels);

// The per-task servables, for load_servable.
std::unique_ptr<Servable> make_tensor_servable(const std::string& bundle_path, const ServableOptions& options);
std::unique_ptr<Servable> make_classifier_servable(const std::string& bundle_path, const ServableOptions& options);
std::unique_ptr<Servable> make_detector_servable(const std::string& bundle_path, const ServableOptions& options);
std::unique_ptr<Servable> make_text_servable(const std::string& bundle_path, const ServableOptions& options);

// Helpers shared by the servables.
std::string datatype_of(DType dtype);  // FP32, FP16, BF16, INT32, INT64, BOOL
// An input that must be a BYTES vector of [batch] (or [batch, 1]) elements; returns the batch.
int64_t bytes_batch(const InferRequest& request, const std::string& name);
// A request parameter as a number/bool, or `fallback` when absent; BadRequest when of another type.
double number_parameter(const InferRequest& request, const std::string& name, double fallback);
bool bool_parameter(const InferRequest& request, const std::string& name, bool fallback);
// A tensor from floats / int32s / strings.
InferTensor fp32_tensor(std::string name, std::vector<int64_t> shape, const float* values);
InferTensor int32_tensor(std::string name, std::vector<int64_t> shape, const std::vector<int32_t>& values);
InferTensor bytes_tensor(std::string name, std::vector<int64_t> shape, std::vector<std::string> values);
// Decodes the encoded images of a BYTES input, refusing (from their headers) images that together
// hold more than max_pixels; throws ServeError(BadRequest) naming the one that fails.
std::vector<Image> decode_images(const InferTensor& images, uint64_t max_pixels);
// One of them, the index-th, on its own.
Image decode_encoded_image(std::string_view bytes, size_t index, uint64_t max_pixels);

}  // namespace kiln::serve
