// The CPU backend's kernels, two kinds:
// - reference: plain, readable loops (a BLAS GEMM where one does the work; large copies over the
//   threads), one for every op. They are kiln's spec: every other backend and the fast CPU
//   kernels are checked against them (tests/ops). Each op's kernel lives in backends/cpu/ops/<op>.cpp and registers
//   itself:
//     KILN_REGISTER_CPU_KERNELS(softmax) { registry.add("softmax", make<SoftmaxKernel>); }
// - fast: kernels on oneDNN (convolutions, dense layers) or kiln's own vectorised loops
//   (attention, log_softmax, layer_norm, topk, max_pool, reduce) in backends/cpu/fast/<op>.cpp,
//   registered with add_fast. A fast factory may decline a node (return null: a form it does not
//   take), which then runs on the reference kernel.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

// Element i of an index tensor (indices, offsets, lengths: i32 or i64) as an int64.
inline int64_t index_at(const TensorRef& t, int64_t i) {
  return t.dtype == DType::I32 ? t.as<const int32_t>()[i] : t.as<const int64_t>()[i];
}

// The rows a row write (write_rows, write_heads) takes for each of `rows` target rows: index[r],
// negative to keep the row, every one checked below `count` (the rows of `from`, the tensor read)
// before anything is written.
inline std::vector<int64_t> row_indices(const TensorRef& index, int64_t rows, int64_t count, const Node& node,
                                        const char* from) {
  std::vector<int64_t> idx(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    idx[r] = index_at(index, r);
    KILN_CHECK(idx[r] < count, "[{}] {}: index[{}] = {} is past the {}'s {} rows", node.op, node.name, r, idx[r], from,
               count);
  }
  return idx;
}

class CpuKernel : public Kernel {
 public:
  // false (most kernels): float tensors of other types reach the kernel as f32 copies and the
  // backend rounds its f32 outputs to the output's type. true: the kernel moves elements of
  // any type itself (reshape, transpose, gather, ...).
  virtual bool any_dtype() const { return false; }
};

using CpuKernelFactory =
    std::function<std::unique_ptr<CpuKernel>(const Graph& graph, int node, const ConstantLookup& constants)>;

class CpuKernelRegistry {
 public:
  static CpuKernelRegistry& instance();  // every kernel of backends/cpu/ops/ registered
  void add(const std::string& op, CpuKernelFactory factory);
  void add_fast(const std::string& op, CpuKernelFactory factory);
  const CpuKernelFactory* find(const std::string& op) const;
  const CpuKernelFactory* find_fast(const std::string& op) const;

 private:
  std::map<std::string, CpuKernelFactory> factories_, fast_factories_;
};

// Calls fn(T{}) with T the element type of a numeric value as a CPU kernel sees it (float types
// arrive as f32, integers as they are); `what` names the node in the error for other types.
template <typename Fn>
void visit_numeric(DType t, const std::string& what, Fn&& fn) {
  switch (t) {
    case DType::F32:
      return fn(float{});
    case DType::I32:
      return fn(int32_t{});
    case DType::I64:
      return fn(int64_t{});
    default:
      fail("{}: no CPU kernel for {}", what, dtype_name(t));
  }
}

// A factory for kernels constructed from (graph, node, constants).
template <typename K>
std::unique_ptr<CpuKernel> make_cpu_kernel(const Graph& g, int node, const ConstantLookup& c) {
  return std::make_unique<K>(g, node, c);
}

}  // namespace kiln

#define KILN_REGISTER_CPU_KERNELS(file) void kiln_register_cpu_kernels_##file(::kiln::CpuKernelRegistry& registry)
#define KILN_REGISTER_CPU_FAST_KERNELS(file) \
  void kiln_register_cpu_fast_kernels_##file(::kiln::CpuKernelRegistry& registry)
