// topk on the CPU (float types arrive as f32): per slice along the axis, a partial sort of the
// indices by value (topk_order.h).
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/topk_order.h"

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
#pragma omp parallel
    {
      std::vector<int64_t> order;
#pragma omp for collapse(2) schedule(static)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const float* xs = in + o * dim * inner + i;
          auto at = [&](int64_t j) { return xs[j * inner]; };
          cpu::k_best(at, dim, k, largest_, order);
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
