// Index arithmetic the CPU reference kernels share: where element i of a broadcast output, or
// of a permuted view, sits in a row-major input.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/shape.h"

namespace kiln {

// Maps a flat index of `out` (row-major) to the flat index of an input of shape `in` that
// broadcasts to it (NumPy rules: missing leading dims and size-1 dims repeat).
class BroadcastIndex {
 public:
  BroadcastIndex(const Shape& in, const Shape& out) : out_(out), stride_(out.size(), 0) {
    int64_t s = 1;
    for (size_t d = in.size(); d-- > 0;) {
      const size_t od = d + (out.size() - in.size());
      stride_[od] = in[d] == 1 ? 0 : s;
      s *= in[d];
    }
  }
  int64_t operator()(int64_t i) const {
    int64_t off = 0;
    for (size_t d = out_.size(); d-- > 0;) {
      const int64_t q = i / out_[d];
      off += (i - q * out_[d]) * stride_[d];
      i = q;
    }
    return off;
  }

 private:
  Shape out_;
  std::vector<int64_t> stride_;
};

// Row-major strides of a shape.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

}  // namespace kiln
