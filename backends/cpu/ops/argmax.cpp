// argmax on the CPU: float types arrive as f32, integers as they are. The running best index
// is kept in the output itself.
#include <cmath>
#include <type_traits>

#include "backends/cpu/cpu_kernel.h"
#include "core/error.h"

namespace kiln {

namespace {

class ArgmaxKernel : public CpuKernel {
 public:
  ArgmaxKernel(const Graph& g, int node, const ConstantLookup&) : axis_(g.nodes()[node].attrs.get_int("axis")) {}
  void run(const KernelArgs& a, int) override {
    visit_numeric(a.inputs[0].dtype, "[argmax] " + a.node->name, [&](auto zero) { typed<decltype(zero)>(a); });
  }

 private:
  template <typename T>
  void typed(const KernelArgs& a) {
    const TensorRef& x = a.inputs[0];
    const int axis = normalize_axis(axis_, x.shape.size(), "[argmax] " + a.node->name);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const int64_t dim = x.shape[axis];
    const T* in = x.as<const T>();
    int64_t* y = a.outputs[0].as<int64_t>();
    // Strictly better only, so ties keep the lower index; NaN beats any number, not another NaN.
    auto better = [](T v, T best) {
      if constexpr (std::is_floating_point_v<T>)
        return !std::isnan(best) && (std::isnan(v) || v > best);
      else
        return v > best;
    };
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* xo = in + o * dim * inner;
      int64_t* yo = y + o * inner;
      for (int64_t i = 0; i < inner; ++i) yo[i] = 0;
      for (int64_t k = 1; k < dim; ++k)
        for (int64_t i = 0; i < inner; ++i)
          if (better(xo[k * inner + i], xo[yo[i] * inner + i])) yo[i] = k;
    }
  }

  int64_t axis_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(argmax) { registry.add("argmax", make_cpu_kernel<ArgmaxKernel>); }

}  // namespace kiln
