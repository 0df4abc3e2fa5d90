#include "backends/engine.h"

#include <chrono>
#include <cstdio>

#include "backends/cpu/cpu_engine.h"
#include "core/error.h"

namespace kiln {

// Defined in backends/cuda/ (or backends/no_cuda/ in builds without CUDA).
bool cuda_backend_available();
std::unique_ptr<Engine> make_cuda_engine(const Graph& graph, const WeightLookup& weights, const nlohmann::json& plan);

bool cuda_available() { return cuda_backend_available(); }

void fill_benchmark_input(std::span<float> input) {
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
}

std::vector<double> Engine::benchmark(int batch, int height, int width, int warmup, int samples, int calls_per_sample) {
  std::vector<float> input(static_cast<size_t>(batch) * input_channels() * height * width);
  std::vector<float> output(static_cast<size_t>(batch) * output_elements(height, width));
  fill_benchmark_input(input);
  for (int i = 0; i < warmup; ++i) run(input.data(), batch, height, width, output.data());
  std::vector<double> ms;
  for (int s = 0; s < samples; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls_per_sample; ++c) run(input.data(), batch, height, width, output.data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                 calls_per_sample);
  }
  return ms;
}

std::unique_ptr<Engine> make_engine(const std::string& device, const Graph& graph, const WeightLookup& weights,
                                    const nlohmann::json& plans) {
  const nlohmann::json cuda_plan = plans.is_object() ? plans.value("cuda", nlohmann::json()) : nlohmann::json();
  if (device == "cpu") return std::make_unique<CpuEngine>(graph, weights);
  if (device == "cuda") {
    KILN_CHECK(cuda_backend_available(), "[engine] --device cuda: no usable CUDA GPU (or kiln was built without CUDA)");
    return make_cuda_engine(graph, weights, cuda_plan);
  }
  KILN_CHECK(device == "auto", "[engine] unknown device '{}' (cpu, cuda or auto)", device);
  if (cuda_backend_available()) {
    try {
      return make_cuda_engine(graph, weights, cuda_plan);
    } catch (const Error& e) {  // e.g. a layer the CUDA backend has no kernel for: say so, run on the CPU
      std::fprintf(stderr, "kiln: note: %s; running on the CPU\n", e.what());
    }
  }
  return std::make_unique<CpuEngine>(graph, weights);
}

}  // namespace kiln
