// softmax on the CPU: per row along the axis, x + mask less the row's max, exponentials summed
// in double. A row with no finite element gives zeros (graph/ops/softmax.cpp says why).
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"

namespace kiln {

namespace {

class SoftmaxKernel : public CpuKernel {
 public:
  SoftmaxKernel(const Graph& g, int node, const ConstantLookup&) : axis_(g.nodes()[node].attrs.get_int("axis")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const bool masked = a.inputs.size() > 1 && a.inputs[1].data;
    const int axis = normalize_axis(axis_, x.shape.size(), "[softmax] " + a.node->name);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const int64_t dim = x.shape[axis];
    const BroadcastIndex mask_index(masked ? a.inputs[1].shape : x.shape, x.shape);
    const float* in = x.as<const float>();
    const float* mask = masked ? a.inputs[1].as<const float>() : nullptr;
    float* out = a.outputs[0].as<float>();
#pragma omp parallel
    {
      std::vector<double> e(static_cast<size_t>(dim));
#pragma omp for schedule(static)
      for (int64_t row = 0; row < outer * inner; ++row) {
        const int64_t base = (row / inner) * dim * inner + row % inner;
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < dim; ++j) {
          const int64_t at = base + j * inner;
          e[j] = static_cast<double>(in[at]) + (mask ? mask[mask_index(at)] : 0.0);
          if (e[j] > max) max = e[j];
        }
        if (max == -std::numeric_limits<double>::infinity()) {
          for (int64_t j = 0; j < dim; ++j) out[base + j * inner] = 0;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < dim; ++j) sum += e[j] = std::exp(e[j] - max);
        for (int64_t j = 0; j < dim; ++j) out[base + j * inner] = static_cast<float>(e[j] / sum);
      }
    }
  }

 private:
  int64_t axis_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(softmax) { registry.add("softmax", make_cpu_kernel<SoftmaxKernel>); }

}  // namespace kiln
