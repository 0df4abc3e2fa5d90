// The order the CPU's topk and log_softmax_topk pick in: NaN above every number (so first when
// the largest come first, last when the smallest do), NaNs equal, ties to the lower index.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace kiln::cpu {

inline bool ranks_above(float p, float q) { return !std::isnan(q) && (std::isnan(p) || p > q); }

// The indices of the k best of at(0) .. at(n - 1), best first, in order[0, k) (order is resized
// to n: its memory serves every call of a thread).
template <typename At>
void k_best(const At& at, int64_t n, int64_t k, bool largest, std::vector<int64_t>& order) {
  order.resize(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t p, int64_t q) {
    const float vp = at(p), vq = at(q);
    if (largest ? ranks_above(vp, vq) : ranks_above(vq, vp)) return true;
    if (ranks_above(vp, vq) || ranks_above(vq, vp)) return false;
    return p < q;
  });
}

}  // namespace kiln::cpu
