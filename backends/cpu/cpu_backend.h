// The CPU backend: runs every op kiln defines, in host memory (see cpu_kernel.h): on the fast
// kernels where one takes the node, else on the reference kernels, after the same fusions as
// the CUDA backend (the gate, residual and pool in the conv). `reference` keeps to the
// reference kernels and the graph as given: the spec the others are tested against. Float
// tensors of any type are computed in f32.
#pragma once

#include "backends/backend.h"

namespace kiln {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(bool reference = false) : reference_(reference) {}
  std::string name() const override { return "cpu"; }
  std::string device() const override { return reference_ ? "cpu-reference" : "cpu"; }
  // What the fast kernels' timings hold for: the CPU model, the oneDNN release (its
  // implementations are the conv variants) and the thread count ("AMD EPYC 9R14, oneDNN 2.6.3,
  // 2 threads").
  std::string hardware() const override;
  bool supports(const Graph& graph, const Node& node) const override;
  void fuse(Graph& graph) const override;
  std::unique_ptr<Kernel> make_kernel(const Graph& graph, int node, const ConstantLookup& constants) override;
  void* allocate(size_t bytes) override;
  void release(void* p) override;
  bool reads_host_memory() const override { return true; }
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  double time_ms(const std::function<void()>& work) override;
  // The cores may be shared (a VM, other processes): the same conv's time moved by about 10%.
  double timing_noise() const override { return 0.10; }

 private:
  bool reference_;
};

}  // namespace kiln
