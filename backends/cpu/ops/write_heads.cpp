// write_heads on the CPU: elements of any type; every index is checked before anything is
// written. The output is normally target's own memory (the op is in place); where an engine
// gave it a buffer of its own, target is copied there first.
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

class WriteHeadsKernel : public CpuKernel {
 public:
  WriteHeadsKernel(const Graph& g, int node, const ConstantLookup&)
      : column_(g.nodes()[node].attrs.get_int("column")) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &source = a.inputs[1], &index = a.inputs[2], &y = a.outputs[0];
    const int64_t rows = target.shape[0], heads = target.shape[1], capacity = target.shape[2], d = target.shape[3];
    const int64_t count = source.shape[0], positions = source.shape[1], width = source.shape[2];
    const std::vector<int64_t> idx = row_indices(index, rows, count, *a.node, "source");
    if (y.data != target.data) std::memcpy(y.data, target.data, target.bytes());
    const size_t elem = dtype_size(target.dtype);
    const auto* src = static_cast<const uint8_t*>(source.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    for (int64_t r = 0; r < rows; ++r) {
      if (idx[r] < 0) continue;
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t t = 0; t < positions; ++t)
          std::memcpy(dst + ((r * heads + h) * capacity + t) * d * elem,
                      src + ((idx[r] * positions + t) * width + column_ + h * d) * elem, static_cast<size_t>(d) * elem);
    }
  }

 private:
  int64_t column_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(write_heads) { registry.add("write_heads", make_cpu_kernel<WriteHeadsKernel>); }

}  // namespace kiln
