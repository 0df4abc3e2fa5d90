// slice on the CPU: elements of any type, each output element fetched from its place in x.
#include <cstring>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"
#include "core/dtype.h"
#include "graph/ops/slice.h"

namespace kiln {

namespace {

class SliceKernel : public CpuKernel {
 public:
  SliceKernel(const Graph&, int, const ConstantLookup&) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int64_t n = y.numel();
    if (n == 0) return;
    const size_t es = dtype_size(x.dtype), rank = x.shape.size();
    const auto dims = slice_dims(*a.node, x.shape);
    const auto xs = strides_of(x.shape);
    int64_t base = 0;
    std::vector<int64_t> stride(rank);  // x's stride along each of y's dims
    for (size_t d = 0; d < rank; ++d) {
      base += dims[d].start * xs[d];
      stride[d] = dims[d].step * xs[d];
    }
    const auto* in = static_cast<const uint8_t*>(x.data);
    auto* out = static_cast<uint8_t*>(y.data);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = base;
      for (size_t d = rank; d-- > 0;) {
        off += (rem % y.shape[d]) * stride[d];
        rem /= y.shape[d];
      }
      std::memcpy(out + i * es, in + off * es, es);
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(slice) { registry.add("slice", make_cpu_kernel<SliceKernel>); }

}  // namespace kiln
