// The CPU backend: runs every op kiln defines, in host memory, as the reference (see
// cpu_kernel.h). Float tensors of any type are computed in f32.
#pragma once

#include "backends/backend.h"

namespace kiln {

class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string device() const override { return "cpu"; }
  bool supports(const Graph& graph, const Node& node) const override;
  std::unique_ptr<Kernel> make_kernel(const Graph& graph, int node, const ConstantLookup& constants) override;
  void* allocate(size_t bytes) override;
  void release(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  double time_ms(const std::function<void()>& work) override;
};

}  // namespace kiln
