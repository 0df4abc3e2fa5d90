// The CUDA backend: kernels per op (backends/cuda/ops/), device memory, one stream, CUDA-event
// timing and CUDA-graph capture. In fp16 precision it runs f32 activations as f16 (rewrite
// lower_precision) and fuses what its kernels can absorb (graph/rewrites/).
#pragma once

#include <cuda_runtime.h>

#include "backends/backend.h"
#include "backends/cuda/cuda_kernel.h"

namespace kiln {

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const std::string& precision);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string device() const override;
  // The GPU's name and the driver's, cuBLASLt's and cuDNN's versions: cuBLASLt's and cuDNN's
  // variants are ranks in their heuristics' lists, which another version may fill otherwise, so
  // choices timed under other versions (a bundle's plans, the timing cache's) are not taken.
  std::string hardware() const override { return hardware_; }
  void convert(Graph& graph) const override;
  bool supports(const Graph& graph, const Node& node) const override;
  void fuse(Graph& graph) const override;
  std::unique_ptr<Kernel> make_kernel(const Graph& graph, int node, const ConstantLookup& constants) override;
  void kernels_made() override { weights_.upload(stream_); }
  void* allocate(size_t bytes) override;
  void release(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  void* allocate_host(size_t bytes) override;
  void release_host(void* p) override;
  void download_queued(void* host, const void* src, size_t bytes) override;
  void synchronize() override;
  void* stream() override { return stream_; }
  double time_ms(const std::function<void()>& work) override;
  std::unique_ptr<Replay> capture(const std::function<void()>& work) override;
  std::vector<double> time_replayed_ms(const std::vector<std::function<void()>>& work) override;
  bool is_accelerator() const override { return true; }
  void queue_error_readback() override;
  void check_errors() override;

 private:
  std::string precision_, device_name_, hardware_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  CudaWeights weights_;
  uint32_t* error_word_ = nullptr;  // device
  uint32_t* error_copy_ = nullptr;  // page-locked host memory: error_word_ as last read back
  bool error_checks_ = false;       // some kernel can set the error word
};

}  // namespace kiln
