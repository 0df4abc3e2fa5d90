// kiln's public C++ API: build a bundle from a checkpoint, load it, run it on named tensors
// (kiln::Model, any bundle) or through a task (kiln::Classifier, kiln::TextGenerator).
//
//   std::unique_ptr<kiln::Classifier> model;
//   kiln::Status s = kiln::Classifier::load("model.bundle", &model);
//   std::vector<kiln::Classification> out;
//   s = model->classify_files({"cat.jpg"}, 5, &out);
//
//   std::unique_ptr<kiln::Model> m;
//   s = kiln::Model::load("model.bundle", &m);
//   for (const auto& in : m->inputs()) ...                 // name, dtype, shape ("batch" x 3 x 224 x 224)
//   std::vector<kiln::HostTensor> outputs;
//   s = m->run({kiln::HostTensor::from_f32("pixels", {1, 3, 224, 224}, pixels)}, &outputs);
//
//   std::unique_ptr<kiln::TextGenerator> t;
//   s = kiln::TextGenerator::load("opus-mt-en-de.bundle", &t);
//   std::vector<kiln::GeneratedText> texts;
//   s = t->generate({"Hello world."}, kiln::GenerationOptions{}, &texts);   // texts[0].text
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct BuildOptions {
  std::string revision;            // Hub revision (branch, tag or commit); empty: main
  std::string precision = "fp32";  // fp32, fp16 (weights in half precision) or fp8 (needs calibration)
  std::vector<int> batch_sizes = {1};
  std::string labels_file;  // optional: class names (JSON list/object or one per line)
  // fp8: the recipe (a name the family ships, or a .json file; empty: the family's default),
  // the calibration images, how many, and optionally a calibration method overriding the recipe's.
  std::string recipe, calib, calib_method;
  size_t calib_samples = 500;
  // Time the kernel variants for batch_sizes now and keep the choices in the bundle. Without
  // plans a GPU times them when an engine first loads the bundle, and the CPU takes oneDNN's
  // picks (a CPU plan holds only for the CPU, oneDNN release and thread count timed on).
  bool plan = true;
};

struct BuildResult {
  std::string architecture, family, model_id, revision, checkpoint_dir;
  uint64_t bundle_bytes = 0;
  double seconds = 0;
  // The device whose timings chose the kernels, with its hardware ("cuda (NVIDIA H200)"; for an
  // fp32 bundle "cpu (AMD EPYC 9R14, oneDNN 2.6.3, 2 threads)"); "" where nothing was timed (an
  // fp16 or fp8 bundle built without a GPU).
  std::string planned_on;
  double planning_seconds = 0;
  std::string recipe;  // fp8: the recipe used
  int fp8_layers = 0;  // fp8: how many layers it put in FP8
  double calibration_seconds = 0;
};

// SOURCE: a local folder (Hugging Face layout, or a format a family imports), or a Hub id
// ("org/model-name") found in the Hugging Face cache or downloaded into it.
Status build(const std::string& source, const std::string& output_path, const BuildOptions& options,
             BuildResult* result);

// Threads kiln's CPU kernels use, for the whole process. Default: the physical cores this
// process may run on (fewer under a cgroup CPU quota), or OMP_NUM_THREADS where it is set.
Status set_cpu_threads(int threads);
int cpu_threads();

struct Prediction {
  int index = 0;
  std::string label;
  float probability = 0;
};

struct Classification {
  std::vector<Prediction> top;  // best first
  std::vector<float> logits;    // every class
};

struct ModelInfo {
  std::string model_id, revision, family, architecture, precision, kiln_version, created, task;
  int channels = 0, height = 0, width = 0, num_classes = 0;  // image classifiers
  std::vector<int> batch_sizes;
  uint64_t bundle_bytes = 0;
  std::string device;  // where it runs: "cpu", "cuda:0 (NVIDIA H200)"
};

// A graph input or output: its name, element type and shape; a dim whose size a run chooses
// has size -1 and the name of its symbol ("batch", "seq").
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::string> symbols;  // per dim: "" for a fixed size
};

// Any bundle, run on named tensors. A bundle may hold several graphs (an encoder and a decoder
// step); the default is the one its task runs. Tensors a graph keeps across runs (a KV cache)
// belong to the model and are shared by its graphs.
class Model {
 public:
  // device: "cpu", "cpu-reference" (the reference kernels), "cuda", or "auto" (the GPU when
  // there is one).
  static Status load(const std::string& bundle_path, std::unique_ptr<Model>* out, const std::string& device = "auto");
  ~Model();

  const ModelInfo& info() const;
  std::vector<std::string> graphs() const;
  std::string default_graph() const;
  // The inputs and outputs of a graph ("" = the default); an output's symbolic dims are not known
  // before a run, so its shape lists the sizes at the graph's example sizes, symbols empty.
  std::vector<TensorSpec> inputs(const std::string& graph = "") const;
  std::vector<TensorSpec> outputs(const std::string& graph = "") const;
  // Runs a graph on tensors named like its inputs (every one); `outputs` receives its outputs.
  Status run(const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs, const std::string& graph = "");
  // Zeroes the tensors the model keeps across runs.
  void reset_states();
  // Where run() spent its time since the last reset_run_times(), per graph: the calls and their
  // wall seconds (copies in, the run, the wait and the copies out). A task's time less these
  // is the work of its own loop (kiln eval --profile). Of those seconds: the graph's engine, made
  // at its first use (constants placed on the device, kernels made), and the plans the calls
  // made for sizes not seen before, or again where a state they hold moved (memory, kernel choices
  // timed on a GPU, graph capture).
  struct GraphTime {
    std::string graph;
    int64_t calls = 0;
    double seconds = 0;
    double setup_seconds = 0;
    int64_t plans = 0;
    double planning_seconds = 0;
    double tuning_seconds = 0;  // of planning_seconds, timing kernel variants
    int64_t timed = 0;          // kernel problems timed by those plans
    int64_t cached = 0;         // kernel problems whose choice the timing cache held
  };
  std::vector<GraphTime> run_times() const;
  void reset_run_times();
  // The bundle's task settings (its manifest's "task" object) as JSON text, for task layers.
  std::string task_settings_json() const;

 private:
  friend struct ModelAccess;  // kiln's own tools (FP8 calibration)
  Model();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A decoded 8-bit RGB image (row-major, 3 bytes a pixel), owned by the caller.
struct ImageView {
  int width = 0, height = 0;
  const uint8_t* rgb = nullptr;
};

class Classifier {
 public:
  // device: "cpu", "cpu-reference" (the reference kernels), "cuda", or "auto" (the GPU when
  // there is one).
  static Status load(const std::string& bundle_path, std::unique_ptr<Classifier>* out,
                     const std::string& device = "auto");
  ~Classifier();

  const ModelInfo& info() const;
  const std::vector<std::string>& labels() const;  // one per class
  // Decodes (JPEG, PNG, WebP), preprocesses as the bundle says and classifies.
  Status classify_files(const std::vector<std::string>& paths, int top_k, std::vector<Classification>* out);
  Status classify_images(const std::vector<ImageView>& images, int top_k, std::vector<Classification>* out);
  // Runs already-preprocessed input: batch x C x H x W floats (NCHW). Writes batch x classes logits.
  Status run(const float* input, int batch, std::vector<float>* logits);

 private:
  Classifier();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Object detection with a detector bundle (task object_detection): letterboxing as
// Ultralytics' predictor, the network's own top-k head (no NMS), boxes mapped back to each image.
struct DetectionOptions {
  float conf = 0.25f;   // keep detections scoring above this
  int max_det = 300;    // at most this many per image
  int imgsz = 0;        // the letterbox size; 0: the bundle's (640 for YOLO)
  bool square = false;  // pad every image to imgsz x imgsz (else to a multiple of 32, as Ultralytics)
};

struct DetectedObject {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // pixels of the original image
  float score = 0;
  int class_id = 0;
  std::string label;
};

class Detector {
 public:
  // device: "cpu", "cpu-reference" (the reference kernels), "cuda", or "auto" (the GPU when
  // there is one).
  static Status load(const std::string& bundle_path, std::unique_ptr<Detector>* out,
                     const std::string& device = "auto");
  ~Detector();

  const ModelInfo& info() const;
  const std::vector<std::string>& labels() const;
  // Decodes (JPEG, PNG, WebP; a JPEG turned upright by its EXIF orientation, as OpenCV reads it) and
  // detects; one list per image, best first.
  Status detect_files(const std::vector<std::string>& paths, const DetectionOptions& options,
                      std::vector<std::vector<DetectedObject>>* out);
  Status detect_images(const std::vector<ImageView>& images, const DetectionOptions& options,
                       std::vector<std::vector<DetectedObject>>* out);

 private:
  Detector();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Per-call overrides of a bundle's generation settings (its generation_config.json); unset
// fields keep the bundle's values.
struct GenerationOptions {
  std::optional<int> num_beams;
  std::optional<int64_t> max_new_tokens, max_length, min_length, min_new_tokens;
  std::optional<int> no_repeat_ngram_size;
  std::optional<double> length_penalty, repetition_penalty;
  int batch = 32;  // sources decoded at once (each with its beams)
  // Called as each source finishes, with its index (for progress).
  std::function<void(size_t)> on_done;
};

struct GeneratedText {
  std::string text;
  std::vector<int64_t> source_ids, ids;  // ids: the decoder start token first
  double score = 0;                      // length-normalised log-probability
  bool truncated = false;                // the source was longer than the model takes
};

// Translation and summarization with an encoder-decoder bundle (task translation or summarization):
// tokenization, batched greedy or beam search as transformers' generate() does it, decoding.
class TextGenerator {
 public:
  static Status load(const std::string& bundle_path, std::unique_ptr<TextGenerator>* out,
                     const std::string& device = "auto");
  ~TextGenerator();

  const ModelInfo& info() const;
  // Results in input order; invalid UTF-8 in a source is an error naming its index.
  Status generate(const std::vector<std::string>& sources, const GenerationOptions& options,
                  std::vector<GeneratedText>* out);
  // The same from token ids (the encoder's input, special tokens included).
  Status generate_ids(const std::vector<std::vector<int64_t>>& sources, const GenerationOptions& options,
                      std::vector<GeneratedText>* out);
  // Token ids of a source or target sentence as the bundle's tokenizer makes them.
  Status tokenize(const std::string& text, bool target, std::vector<int64_t>* ids);
  // The underlying model (its graphs "encoder", "decoder_step", "decoder_topk").
  Model& model();

 private:
  TextGenerator();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
