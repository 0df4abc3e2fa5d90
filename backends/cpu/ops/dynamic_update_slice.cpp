// dynamic_update_slice on the CPU: elements of any type; the offset is checked before anything
// is written. The output is normally target's own memory (the op is in place); where an engine
// gave it a buffer of its own, target is copied there first. Large copies run over the threads,
// and so do many small slices: a decoder step writes 256 bytes into each of 1024 (row, head)
// rows of a layer's cache at 128 rows, each to a line no cache holds, and one thread waiting
// for those lines took 0.08 ms a layer for 0.26 MB.
#include <vector>

#include "backends/cpu/copy.h"
#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

// Small slices adding up to this many bytes are copied over the threads.
constexpr size_t kParallelSlicesBytes = size_t{64} << 10;

class DynamicUpdateSliceKernel : public CpuKernel {
 public:
  DynamicUpdateSliceKernel(const Graph& g, int node, const ConstantLookup&)
      : axis_(g.nodes()[node].attrs.get_int("axis")) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &update = a.inputs[1], &offset = a.inputs[2], &y = a.outputs[0];
    const int axis = normalize_axis(axis_, target.shape.size(), "[dynamic_update_slice] " + a.node->name);
    const int64_t dim = target.shape[axis], n = update.shape[axis], count = offset.numel();
    std::vector<int64_t> offsets(count);
    for (int64_t i = 0; i < count; ++i) {
      offsets[i] = index_at(offset, i);
      KILN_CHECK(offsets[i] >= 0 && offsets[i] <= dim - n,
                 "[dynamic_update_slice] {}: slice [{}, {}) is outside [0, {}) along axis {}", a.node->name, offsets[i],
                 offsets[i] + n, dim, axis);
    }
    if (y.data != target.data) cpu::parallel_copy(y.data, target.data, target.bytes());
    int64_t outer = 1, inner = dtype_size(target.dtype);
    for (int d = 0; d < axis; ++d) outer *= target.shape[d];
    for (size_t d = axis + 1; d < target.shape.size(); ++d) inner *= target.shape[d];
    // With one offset per leading row, outer index o lies in row o / (outer / rows).
    const int64_t per_offset = outer / count;
    const auto* src = static_cast<const uint8_t*>(update.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    const size_t slice = static_cast<size_t>(n * inner);
    // Slices below kParallelCopyBytes are each one memcpy, spread over the threads; larger
    // ones are spread over the threads one by one.
#pragma omp parallel for schedule(static) if (slice < cpu::kParallelCopyBytes && outer * slice >= kParallelSlicesBytes)
    for (int64_t o = 0; o < outer; ++o)
      cpu::parallel_copy(dst + (o * dim + offsets[o / per_offset]) * inner, src + o * n * inner, slice);
  }

 private:
  int64_t axis_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(dynamic_update_slice) {
  registry.add("dynamic_update_slice", make_cpu_kernel<DynamicUpdateSliceKernel>);
}

}  // namespace kiln
