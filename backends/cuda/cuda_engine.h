// The CUDA backend: fp16 NHWC activations, fp32 accumulation. At construction a planner maps the
// graph onto fused kernels (stem; pointwise GEMM with gate / bias / activation / residual;
// depthwise + pool; squeeze-excite MLP), then per batch size it plans one activation arena,
// picks each GEMM's tile variant by timing them on this GPU, and captures the whole network in
// one CUDA graph that every later call replays.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/kernels.cuh"
#include "backends/engine.h"
#include "graph/memory_plan.h"

namespace kiln {

struct CudaStep;

class CudaEngine : public Engine {
 public:
  // `plan`: a bundle's saved choices ({"device": ..., "batches": {...}}), used if made on this GPU model.
  CudaEngine(const Graph& graph, const WeightLookup& weights, const nlohmann::json& plan = nullptr);
  ~CudaEngine() override;

  std::string device() const override;
  void run(const float* input, int batch, int height, int width, float* output) override;
  int output_elements(int height, int width) const override;
  int input_channels() const override { return graph_.values()[graph_.input()].channels; }
  int64_t activation_bytes() const override;

  // Plans the arena, times each GEMM's tile variants on this GPU, captures the CUDA graph.
  void prepare(int batch, int height, int width) override;
  // CUDA-graph replays timed with CUDA events; the input stays in device memory.
  std::vector<double> benchmark(int batch, int height, int width, int warmup, int samples,
                                int calls_per_sample) override;
  // Kernel time per layer group, from eager launches with events between kernels.
  std::map<std::string, double> profile(int batch, int height, int width, int iterations) override;
  // The kernels of a batch size, with the GEMM tile chosen for each GEMM.
  std::vector<std::string> plan_summary(int batch) const override;
  nlohmann::json export_plan() const override;

  float* device_input() const { return input_; }
  const float* device_output() const { return output_; }
  void replay(int batch, cudaStream_t stream);
  cudaStream_t stream() const { return stream_; }

 private:
  struct BatchPlan {
    MemoryPlan memory;
    std::vector<int> variants;  // per step; -1 for steps that are not GEMMs
    cudaGraphExec_t graph = nullptr;
  };
  void build_steps(const WeightLookup& weights);
  cuda::GemmArgs gemm_args(const CudaStep& step, int batch, const BatchPlan& plan) const;
  void enqueue(int batch, const BatchPlan& plan, cudaStream_t stream, int only_step = -1);
  void ensure_capacity(int64_t arena_halves, int batch);
  void tune(int batch, BatchPlan& plan);
  void drop_graphs();

  Graph graph_;
  std::vector<CudaStep> steps_;
  int height_ = 0, width_ = 0;
  std::map<int, BatchPlan> plans_;
  std::map<int, std::vector<int>> saved_variants_;  // from the bundle, when planned on this GPU model
  std::string device_name_;
  int compute_capability_ = 0;         // major * 10 + minor
  std::vector<int64_t> pool_offsets_;  // per pool slot, floats per image
  int64_t pool_floats_per_image_ = 0;
  void* weights_ = nullptr;
  float* workspace_ = nullptr;  // split-K partial sums
  __half* arena_ = nullptr;
  int64_t arena_capacity_ = 0;  // halves
  float* input_ = nullptr;
  float* output_ = nullptr;
  float* pool_ = nullptr;
  int capacity_batch_ = 0;
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

}  // namespace kiln
