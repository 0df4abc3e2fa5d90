// attention on the CPU: the reference arithmetic (backends/cpu/attention_reference.h).
#include "backends/cpu/attention_reference.h"
#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class AttentionKernel : public CpuKernel {
 public:
  AttentionKernel(const Graph& g, int node, const ConstantLookup&) : attrs_(cpu::attention_attrs(g, node)) {}
  void run(const KernelArgs& a, int) override {
    cpu::attention_reference(cpu::AttentionRows(a, attrs_), a.outputs[0].as<float>());
  }

 private:
  cpu::AttentionAttrs attrs_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(attention) { registry.add("attention", make_cpu_kernel<AttentionKernel>); }

}  // namespace kiln
