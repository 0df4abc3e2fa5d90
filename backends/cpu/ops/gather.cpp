// gather on the CPU: rows of any type copied by index, every index checked first (token ids
// are untrusted: none may read outside data). Large gathers run over the threads. A constant
// table stored in another type than the graph reads it in (an fp16 bundle's f16 embeddings
// read as f32) is read where the bundle holds it, each gathered row converted: the engine would
// otherwise widen the whole table for every graph that gathers from it (three copies of a
// 58101 x 512 vocabulary, 357 MB, in a translation model's engines).
#include <cstring>
#include <optional>
#include <vector>

#include "backends/cpu/copy.h"
#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

class GatherKernel : public CpuKernel {
 public:
  GatherKernel(const Graph& g, int node, const ConstantLookup& constants)
      : axis_(g.nodes()[node].attrs.get_int("axis")), batch_dims_(g.nodes()[node].attrs.get_int("batch_dims")) {
    const Value& table = g.values()[g.nodes()[node].inputs[0]];
    if (table.kind != ValueKind::Constant) return;
    const ConstantView view = constants(table.name);
    if (view.dtype != table.dtype && is_float(view.dtype) && is_float(table.dtype) &&
        reinterpret_cast<uintptr_t>(view.bytes.data()) % dtype_size(view.dtype) == 0)
      stored_ = view;
  }
  bool any_dtype() const override { return true; }
  bool packs_input(int slot) const override { return slot == 0 && stored_.has_value(); }
  std::string describe() const override {
    return stored_ ? std::string("rows converted from ") + dtype_name(stored_->dtype) : "";
  }
  void run(const KernelArgs& a, int) override {
    if (a.inputs[1].dtype == DType::I32) return typed<int32_t>(a);
    return typed<int64_t>(a);
  }

 private:
  template <typename I>
  void typed(const KernelArgs& a) {
    TensorRef data = a.inputs[0];
    if (stored_) data = TensorRef{const_cast<uint8_t*>(stored_->bytes.data()), stored_->dtype, stored_->shape};
    const TensorRef& indices = a.inputs[1];
    const int axis = normalize_axis(axis_, data.shape.size(), "[gather] " + a.node->name);
    int64_t outer = 1, groups = 1, inner = dtype_size(data.dtype);
    for (int d = 0; d < axis; ++d) outer *= data.shape[d];
    for (int64_t d = 0; d < batch_dims_; ++d) groups *= data.shape[d];
    for (size_t d = axis + 1; d < data.shape.size(); ++d) inner *= data.shape[d];
    // Each group of outer / groups rows (one batch element) reads its own `count` indices.
    const int64_t dim = data.shape[axis], count = groups ? indices.numel() / groups : 0;
    const int64_t outer_per_group = groups ? outer / groups : 0;
    const I* idx = indices.as<const I>();
    for (int64_t i = 0; i < indices.numel(); ++i)
      KILN_CHECK(idx[i] >= 0 && idx[i] < dim, "[gather] {}: index {} is out of range [0, {})", a.node->name,
                 static_cast<int64_t>(idx[i]), dim);
    const auto* in = static_cast<const uint8_t*>(data.data);
    auto* out = static_cast<uint8_t*>(a.outputs[0].data);
    const bool large = outer * count * inner >= static_cast<int64_t>(cpu::kParallelCopyBytes);
    if (stored_) {  // each row converted from the stored type to the output's
      const DType to = a.outputs[0].dtype;
      const int64_t elements = inner / dtype_size(data.dtype), out_inner = elements * dtype_size(to);
#pragma omp parallel if (large)
      {
        std::vector<float> row(to == DType::F32 ? 0 : static_cast<size_t>(elements));
#pragma omp for collapse(2) schedule(static)
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < count; ++i) {
            const I* row_idx = idx + (o / outer_per_group) * count;
            const uint8_t* src = in + (o * dim + row_idx[i]) * inner;
            uint8_t* dst = out + (o * count + i) * out_inner;
            if (to == DType::F32) {
              convert_to_f32(data.dtype, src, reinterpret_cast<float*>(dst), elements);
            } else {
              convert_to_f32(data.dtype, src, row.data(), elements);
              convert_from_f32(to, row.data(), dst, elements);
            }
          }
      }
      return;
    }
#pragma omp parallel for collapse(2) schedule(static) if (large)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < count; ++i) {
        const I* row_idx = idx + (o / outer_per_group) * count;
        std::memcpy(out + (o * count + i) * inner, in + (o * dim + row_idx[i]) * inner, static_cast<size_t>(inner));
      }
  }

  int64_t axis_, batch_dims_;
  std::optional<ConstantView> stored_;  // a constant table as stored, where its type is not the graph's
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(gather) { registry.add("gather", make_cpu_kernel<GatherKernel>); }

}  // namespace kiln
