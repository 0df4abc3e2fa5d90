// matmul on the CPU: per output batch, y = alpha * op(a) @ op(b) with double sums (a reference:
// plain loops, one output row per OpenMP task).
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"

namespace kiln {

namespace {

class MatmulKernel : public CpuKernel {
 public:
  MatmulKernel(const Graph& g, int node, const ConstantLookup&) {
    const Node& n = g.nodes()[node];
    ta_ = n.attrs.get_int("transpose_a") != 0;
    tb_ = n.attrs.get_int("transpose_b") != 0;
    alpha_ = n.attrs.get_float("alpha");
  }
  void run(const KernelArgs& args, int) override {
    const TensorRef &a = args.inputs[0], &b = args.inputs[1], &y = args.outputs[0];
    const size_t ra = a.shape.size(), ry = y.shape.size();
    const int64_t m = y.shape[ry - 2], n = y.shape[ry - 1], k = a.shape[ra - (ta_ ? 2 : 1)];
    // a's element (row r, column c of op(a)) and b's likewise, within one matrix.
    const int64_t a_row = ta_ ? 1 : k, a_col = ta_ ? m : 1, b_row = tb_ ? 1 : n, b_col = tb_ ? k : 1;
    const Shape batch(y.shape.begin(), y.shape.end() - 2);
    const BroadcastIndex a_batch(Shape(a.shape.begin(), a.shape.end() - 2), batch),
        b_batch(Shape(b.shape.begin(), b.shape.end() - 2), batch);
    const int64_t batches = numel(batch);
    const float* pa = a.as<const float>();
    const float* pb = b.as<const float>();
    float* py = y.as<float>();
#pragma omp parallel
    {
      std::vector<double> acc(static_cast<size_t>(n));
#pragma omp for schedule(static)
      for (int64_t row = 0; row < batches * m; ++row) {
        const int64_t t = row / m, i = row % m;
        const float* ai = pa + a_batch(t) * m * k + i * a_row;
        const float* bt = pb + b_batch(t) * k * n;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t p = 0; p < k; ++p) {
          const double av = ai[p * a_col];
          const float* bp = bt + p * b_row;
          for (int64_t j = 0; j < n; ++j) acc[j] += av * bp[j * b_col];
        }
        for (int64_t j = 0; j < n; ++j) py[row * n + j] = static_cast<float>(alpha_ * acc[j]);
      }
    }
  }

 private:
  bool ta_ = false, tb_ = false;
  double alpha_ = 1;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(matmul) { registry.add("matmul", make_cpu_kernel<MatmulKernel>); }

}  // namespace kiln
