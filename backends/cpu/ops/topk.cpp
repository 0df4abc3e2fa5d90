// topk on the CPU (float types arrive as f32): per slice along the axis, a partial sort of the
// indices by value, ties to the lower index.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/cpu/cpu_kernel.h"

namespace kiln {

namespace {

class TopkKernel : public CpuKernel {
 public:
  TopkKernel(const Graph& g, int node, const ConstantLookup&) {
    const Node& n = g.nodes()[node];
    axis_ = n.attrs.get_int("axis");
    largest_ = n.attrs.get_int("largest") != 0;
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const int axis = normalize_axis(axis_, x.shape.size(), "[topk] " + a.node->name);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const int64_t dim = x.shape[axis], k = a.outputs[0].shape[axis];
    const float* in = x.as<const float>();
    float* values = a.outputs[0].as<float>();
    int64_t* indices = a.outputs[1].as<int64_t>();
    // NaN above every number (so first when largest, last when smallest), NaNs equal.
    auto greater = [](float p, float q) { return !std::isnan(q) && (std::isnan(p) || p > q); };
#pragma omp parallel
    {
      std::vector<int64_t> order(static_cast<size_t>(dim));
#pragma omp for collapse(2) schedule(static)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const float* xs = in + o * dim * inner + i;
          auto at = [&](int64_t j) { return xs[j * inner]; };
          std::iota(order.begin(), order.end(), int64_t{0});
          std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t p, int64_t q) {
            const float vp = at(p), vq = at(q);
            if (largest_ ? greater(vp, vq) : greater(vq, vp)) return true;
            if (greater(vp, vq) || greater(vq, vp)) return false;
            return p < q;
          });
          for (int64_t j = 0; j < k; ++j) {
            const int64_t out = (o * k + j) * inner + i;
            values[out] = at(order[j]);
            indices[out] = order[j];
          }
        }
    }
  }

 private:
  int64_t axis_ = -1;
  bool largest_ = true;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(topk) { registry.add("topk", make_cpu_kernel<TopkKernel>); }

}  // namespace kiln
