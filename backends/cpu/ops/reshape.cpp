// reshape on the CPU: the output is the input's memory (graph/ops/reshape.cpp says it is a
// view), so there is nothing to move unless an engine gave it a buffer of its own.
#include <cstring>

#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class ReshapeKernel : public CpuKernel {
 public:
  ReshapeKernel(const Graph&, int, const ConstantLookup&) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    if (a.outputs[0].data != a.inputs[0].data) std::memcpy(a.outputs[0].data, a.inputs[0].data, a.outputs[0].bytes());
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(reshape) { registry.add("reshape", make_cpu_kernel<ReshapeKernel>); }

}  // namespace kiln
