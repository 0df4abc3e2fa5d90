// Shapes of graph values. A declared shape (graph inputs, states) may name symbolic dims
// ("batch", "seq"); a run binds every symbol to a size, and each op computes its output shapes
// from its input shapes. Shapes are row-major: the last dim is contiguous.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

using Shape = std::vector<int64_t>;
using Bindings = std::map<std::string, int64_t>;  // symbol -> size

struct Dim {
  int64_t value = 0;   // the size, when symbol is empty
  std::string symbol;  // e.g. "batch"
  bool is_symbol() const { return !symbol.empty(); }
  bool operator==(const Dim&) const = default;
};
using ShapeSpec = std::vector<Dim>;

ShapeSpec fixed_shape(const Shape& shape);
// The concrete shape under `bindings`; throws if a symbol is unbound.
Shape resolve(const ShapeSpec& spec, const Bindings& bindings);
std::string to_string(const Shape& shape);        // [1, 3, 224, 224]
std::string to_string(const ShapeSpec& shape);    // [batch, 3, 224, 224]
std::string to_string(const Bindings& bindings);  // batch=1,seq=7 (sorted by name): a plan's key

int64_t numel(const Shape& shape);  // overflow-checked
// NumPy broadcasting of two shapes. `where` starts the error message: "[op] node".
Shape broadcast(const Shape& a, const Shape& b, const std::string& where);
// An axis in [-rank, rank) as an index in [0, rank).
int normalize_axis(int64_t axis, size_t rank, const std::string& where);

}  // namespace kiln
