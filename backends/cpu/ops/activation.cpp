// relu, silu, sigmoid, tanh, gelu on the CPU: f32 elementwise.
#include <algorithm>

#include "backends/cpu/activation.h"
#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class ActivationKernel : public CpuKernel {
 public:
  ActivationKernel(const Graph& g, int node, const ConstantLookup&) : act_(node_activation(g.nodes()[node])) {}
  void run(const KernelArgs& a, int) override {
    const float* x = a.inputs[0].as<const float>();
    float* y = a.outputs[0].as<float>();
    const int64_t n = a.outputs[0].numel();
    // In chunks through the vectorised row function (the activation in place on the copy).
    constexpr int64_t kChunk = 4096;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t start = 0; start < n; start += kChunk) {
      const int64_t count = std::min(kChunk, n - start);
      if (y != x) std::copy(x + start, x + start + count, y + start);
      cpu::bias_activation_row(y + start, static_cast<int>(count), nullptr, act_);
    }
  }

 private:
  Activation act_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(activation) {
  for (const char* op : {"relu", "silu", "sigmoid", "tanh", "gelu"})
    registry.add(op, make_cpu_kernel<ActivationKernel>);
}

}  // namespace kiln
