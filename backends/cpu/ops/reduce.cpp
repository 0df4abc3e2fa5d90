// reduce (sum, mean, max over axes) on the CPU; sums in double.
#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "core/error.h"

namespace kiln {

namespace {

class ReduceKernel : public CpuKernel {
 public:
  ReduceKernel(const Graph& g, int node, const ConstantLookup&) {
    const Node& n = g.nodes()[node];
    op_ = n.attrs.get_string("op");
    axes_ = n.attrs.get_ints("axes");
  }
  void run(const KernelArgs& a, int) override {
    visit_numeric(a.inputs[0].dtype, "[reduce] " + a.node->name, [&](auto zero) { typed<decltype(zero)>(a); });
  }

 private:
  template <typename T>
  void typed(const KernelArgs& a) {
    const TensorRef& x = a.inputs[0];
    const size_t rank = x.shape.size();
    std::set<int> axes;
    for (int64_t ax : axes_) axes.insert(normalize_axis(ax, rank, "[reduce] " + a.node->name));
    const int64_t n_out = a.outputs[0].numel();
    std::vector<double> acc(static_cast<size_t>(n_out), op_ == "max" ? -std::numeric_limits<double>::infinity() : 0);
    const T* in = x.as<const T>();
    int64_t count = 1;
    for (int ax : axes) count *= x.shape[ax];
    const bool max = op_ == "max";
    auto add = [max](double& to, T v) { to = max ? std::max(to, static_cast<double>(v)) : to + v; };
    if (*axes.rbegin() - *axes.begin() + 1 == static_cast<int>(axes.size())) {
      // Contiguous axes (a global pool over H and W): outer x reduced x inner loops.
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < *axes.begin(); ++d) outer *= x.shape[d];
      for (size_t d = *axes.rbegin() + 1; d < rank; ++d) inner *= x.shape[d];
#pragma omp parallel for schedule(static)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t r = 0; r < count; ++r)
          for (int64_t i = 0; i < inner; ++i) add(acc[o * inner + i], in[(o * count + r) * inner + i]);
    } else {
      // Any axes: each element's output index is its coordinates with the reduced axes dropped.
      const int64_t n = x.numel();
      for (int64_t i = 0; i < n; ++i) {
        int64_t rem = i, out = 0, mul = 1;
        for (size_t d = rank; d-- > 0;) {
          const int64_t c = rem % x.shape[d];
          rem /= x.shape[d];
          if (axes.count(static_cast<int>(d))) continue;
          out += c * mul;
          mul *= x.shape[d];
        }
        add(acc[out], in[i]);
      }
    }
    T* y = a.outputs[0].as<T>();
    for (int64_t i = 0; i < n_out; ++i) y[i] = static_cast<T>(op_ == "mean" ? acc[i] / count : acc[i]);
  }

  std::string op_;
  std::vector<int64_t> axes_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(reduce) { registry.add("reduce", make_cpu_kernel<ReduceKernel>); }

}  // namespace kiln
