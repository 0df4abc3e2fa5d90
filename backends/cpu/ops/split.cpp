// split on the CPU: elements of any type; per index of the dims before the axis, consecutive
// blocks of x go to each output in turn, those indices over the threads once x passes
// cpu/copy.h's size.
#include <cstring>

#include "backends/cpu/copy.h"

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class SplitKernel : public CpuKernel {
 public:
  SplitKernel(const Graph& g, int node, const ConstantLookup&) : axis_(g.nodes()[node].attrs.get_int("axis")) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const size_t es = dtype_size(x.dtype);
    const int axis = normalize_axis(axis_, x.shape.size(), "[split] " + a.node->name);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const size_t in_row = static_cast<size_t>(x.shape[axis] * inner) * es;
    const auto* in = static_cast<const uint8_t*>(x.data);
#pragma omp parallel for schedule(static) if (in_row * outer >= cpu::kParallelCopyBytes)
    for (int64_t o = 0; o < outer; ++o) {
      size_t offset = 0;
      for (const TensorRef& y : a.outputs) {
        const size_t block = static_cast<size_t>(y.shape[axis] * inner) * es;
        if (block == 0) continue;  // an empty output may have no memory at all
        std::memcpy(static_cast<uint8_t*>(y.data) + o * block, in + o * in_row + offset, block);
        offset += block;
      }
    }
  }

 private:
  int64_t axis_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(split) { registry.add("split", make_cpu_kernel<SplitKernel>); }

}  // namespace kiln
