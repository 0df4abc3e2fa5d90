#include "graph/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked_math.h"
#include "core/error.h"

namespace kiln {

ShapeSpec fixed_shape(const Shape& shape) {
  ShapeSpec s;
  for (int64_t d : shape) s.push_back({d, {}});
  return s;
}

Shape resolve(const ShapeSpec& spec, const Bindings& bindings) {
  Shape out;
  for (const Dim& d : spec) {
    if (!d.is_symbol()) {
      out.push_back(d.value);
      continue;
    }
    auto it = bindings.find(d.symbol);
    KILN_CHECK(it != bindings.end(), "[shape] symbol '{}' has no size", d.symbol);
    out.push_back(it->second);
  }
  return out;
}

std::string to_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string to_string(const ShapeSpec& shape) {
  std::vector<std::string> parts;
  for (const Dim& d : shape) parts.push_back(d.is_symbol() ? d.symbol : std::to_string(d.value));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string to_string(const Bindings& bindings) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : bindings) parts.push_back(fmt::format("{}={}", k, v));
  return fmt::format("{}", fmt::join(parts, ","));
}

int64_t numel(const Shape& shape) { return static_cast<int64_t>(checked_numel(shape, "shape")); }

Shape broadcast(const Shape& a, const Shape& b, const std::string& what) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    KILN_CHECK(da == db || da == 1 || db == 1, "{}: shapes {} and {} do not broadcast", what, to_string(a),
               to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_axis(int64_t axis, size_t rank, const std::string& what) {
  const int64_t r = static_cast<int64_t>(rank);
  KILN_CHECK(axis >= -r && axis < r, "{}: axis {} is out of range for rank {}", what, axis, rank);
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

}  // namespace kiln
