// What every backend offers the tasks: run a graph on NCHW fp32 input, write the output.
// make_engine picks the backend by name ("cpu", "cuda", or "auto": the GPU when there is one).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/weights.h"

namespace kiln {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string device() const = 0;  // "cpu", "cuda:0 (NVIDIA H200)"
  // input: [batch, C, H, W] fp32 in host memory; output: [batch, output elements] fp32.
  virtual void run(const float* input, int batch, int height, int width, float* output) = 0;
  virtual int output_elements(int height, int width) const = 0;
  virtual int input_channels() const = 0;
  // Activation memory of the last planned run, in bytes.
  virtual int64_t activation_bytes() const = 0;

  // Plans (and on GPUs tunes and captures) a batch size ahead of the first run.
  virtual void prepare(int batch, int height, int width) {}
  // ms per call, one sample per chunk of `calls_per_sample` calls, input already where the engine
  // keeps it (on the GPU for CUDA). The default times run() on host buffers.
  virtual std::vector<double> benchmark(int batch, int height, int width, int warmup, int samples,
                                        int calls_per_sample);
  // Kernel time per layer group ("stem", "depthwise", ...) in ms per call; empty if unsupported.
  virtual std::map<std::string, double> profile(int batch, int height, int width, int iterations) { return {}; }
  // How the engine runs a batch size (e.g. the GEMM tile chosen for each layer), for reports.
  virtual std::vector<std::string> plan_summary(int batch) const { return {}; }
  // The choices made by prepare() for every prepared batch size, to store in a bundle; a later
  // engine on the same device model given them back skips its own tuning.
  virtual nlohmann::json export_plan() const { return nullptr; }
};

// Deterministic, non-zero input in [-1, 1) for timing and tuning (zeros can run faster than real data).
void fill_benchmark_input(std::span<float> input);

bool cuda_available();  // a CUDA build with a usable GPU
// `plans` is a bundle's "plans" object ({"cuda": {...}}); backends use their own entry if any.
std::unique_ptr<Engine> make_engine(const std::string& device, const Graph& graph, const WeightLookup& weights,
                                    const nlohmann::json& plans = nlohmann::json::object());

}  // namespace kiln
