// write_rows on the CPU: elements of any type; every index is checked before anything is
// written. The output is normally target's own memory (the op is in place); where an engine
// gave it a buffer of its own, target is copied there first.
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

class WriteRowsKernel : public CpuKernel {
 public:
  WriteRowsKernel(const Graph&, int, const ConstantLookup&) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &update = a.inputs[1], &index = a.inputs[2], &y = a.outputs[0];
    const int64_t rows = target.shape[0], count = update.shape[0];
    const std::vector<int64_t> idx = row_indices(index, rows, count, *a.node, "update");
    if (y.data != target.data) std::memcpy(y.data, target.data, target.bytes());
    const size_t elem = dtype_size(target.dtype);
    // The update's row is a block of [d1, ..., dk] inside the target's [D1, ..., Dk]: copied as
    // runs of its last dim.
    const int rank = static_cast<int>(target.shape.size());
    const int64_t run = rank > 1 ? update.shape[rank - 1] : 1;
    int64_t update_row = 1, target_row = 1;
    for (int d = 1; d < rank; ++d) {
      update_row *= update.shape[d];
      target_row *= target.shape[d];
    }
    const auto* src = static_cast<const uint8_t*>(update.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    for (int64_t r = 0; r < rows; ++r) {
      if (idx[r] < 0) continue;
      for (int64_t k = 0; k < update_row; k += run) {
        int64_t rest = k, at = 0, stride = 1;
        for (int d = rank - 1; d >= 1; --d) {
          at += rest % update.shape[d] * stride;
          rest /= update.shape[d];
          stride *= target.shape[d];
        }
        std::memcpy(dst + (r * target_row + at) * elem, src + (idx[r] * update_row + k) * elem,
                    static_cast<size_t>(run) * elem);
      }
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(write_rows) { registry.add("write_rows", make_cpu_kernel<WriteRowsKernel>); }

}  // namespace kiln
