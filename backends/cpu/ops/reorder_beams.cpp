// reorder_beams on the CPU: elements of any type; every parent is checked before anything is
// written. The output is normally target's own memory (the op is in place); where an engine
// gave it a buffer of its own, target is copied there first.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

class ReorderBeamsKernel : public CpuKernel {
 public:
  ReorderBeamsKernel(const Graph&, int, const ConstantLookup&) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &parent_in = a.inputs[1], &length_in = a.inputs[2], &y = a.outputs[0];
    const Node& n = *a.node;
    const int64_t rows = target.shape[0], beams = parent_in.shape[1];
    KILN_CHECK(parent_in.shape[0] * beams == rows, "[reorder_beams] {}: parent {} is not [groups, beams] of {} rows",
               n.name, to_string(parent_in.shape), rows);
    if (rows == 0) return;
    const int axis = normalize_axis(n.attrs.get_int("axis"), target.shape.size(), "[reorder_beams] " + n.name);
    std::vector<int64_t> parent(rows), length(rows);  // parent as a row
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = index_at(parent_in, r);
      KILN_CHECK(b >= 0 && b < beams, "[reorder_beams] {}: parent {} of row {} is not one of its group's {} beams",
                 n.name, b, r, beams);
      parent[r] = r / beams * beams + b;
      length[r] = index_at(length_in, r);
    }
    if (y.data != target.data) std::memcpy(y.data, target.data, target.bytes());
    // A row is [outer, extent, inner] around the axis; position t of each outer block moves.
    int64_t outer = 1, inner = 1;
    for (int d = 1; d < axis; ++d) outer *= target.shape[d];
    for (size_t d = axis + 1; d < target.shape.size(); ++d) inner *= target.shape[d];
    const int64_t extent = target.shape[axis];
    const size_t elem = dtype_size(target.dtype), row_bytes = static_cast<size_t>(outer * extent * inner) * elem;
    auto* data = static_cast<uint8_t*>(y.data);
    const size_t block = static_cast<size_t>(extent * inner) * elem;
    // Each moving row's positions are copied from its parent aside first, then into place: the
    // rows of a group read one another. Groups are independent: one per thread at a time, each
    // thread with its own buffer (not zeroed: only what was copied into it is read back).
    const int64_t groups = rows / beams;
    const bool threaded = groups > 1 && row_bytes * static_cast<size_t>(rows) > (size_t{1} << 20);
#pragma omp parallel if (threaded)
    {
      std::unique_ptr<uint8_t[]> aside(new uint8_t[static_cast<size_t>(beams) * row_bytes]);
#pragma omp for schedule(static)
      for (int64_t g = 0; g < groups; ++g)
        for (int pass = 0; pass < 2; ++pass)
          for (int64_t r = g * beams; r < (g + 1) * beams; ++r) {
            const int64_t moved = std::clamp<int64_t>(length[r], 0, extent);
            if (parent[r] == r || moved == 0) continue;
            const size_t run = static_cast<size_t>(moved * inner) * elem;
            uint8_t* kept = aside.get() + (r - g * beams) * row_bytes;
            for (int64_t o = 0; o < outer; ++o)
              if (pass == 0)
                std::memcpy(kept + o * run, data + parent[r] * row_bytes + o * block, run);
              else
                std::memcpy(data + r * row_bytes + o * block, kept + o * run, run);
          }
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(reorder_beams) { registry.add("reorder_beams", make_cpu_kernel<ReorderBeamsKernel>); }

}  // namespace kiln
