// add, sub, mul, div on the CPU with NumPy broadcasting, for f32 (other floats arrive as f32),
// i32 and i64.
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"
#include "core/error.h"

namespace kiln {

namespace {

enum class BinaryFn { Add, Sub, Mul, Div };

template <typename T>
T apply(BinaryFn f, T a, T b) {
  switch (f) {
    case BinaryFn::Add:
      return a + b;
    case BinaryFn::Sub:
      return a - b;
    case BinaryFn::Mul:
      return a * b;
    case BinaryFn::Div:
      if constexpr (std::is_integral_v<T>) KILN_CHECK(b != 0, "[div] integer division by zero");
      return a / b;
  }
  return a;
}

class BinaryKernel : public CpuKernel {
 public:
  BinaryKernel(const Graph& g, int node, const ConstantLookup&) {
    const std::string& op = g.nodes()[node].op;
    fn_ = op == "add" ? BinaryFn::Add : op == "sub" ? BinaryFn::Sub : op == "mul" ? BinaryFn::Mul : BinaryFn::Div;
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.inputs[1], &out = a.outputs[0];
    visit_numeric(out.dtype, "[" + a.node->op + "] " + a.node->name,
                  [&](auto zero) { typed<decltype(zero)>(x, y, out); });
  }

 private:
  template <typename T>
  void typed(const TensorRef& x, const TensorRef& y, const TensorRef& out) {
    const T* a = x.as<const T>();
    const T* b = y.as<const T>();
    T* o = out.as<T>();
    const int64_t n = out.numel();
    if (x.shape == out.shape && y.shape == out.shape) {
      for (int64_t i = 0; i < n; ++i) o[i] = apply(fn_, a[i], b[i]);
      return;
    }
    const BroadcastIndex ia(x.shape, out.shape), ib(y.shape, out.shape);
    for (int64_t i = 0; i < n; ++i) o[i] = apply(fn_, a[ia(i)], b[ib(i)]);
  }
  BinaryFn fn_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(binary) {
  for (const char* op : {"add", "sub", "mul", "div"}) registry.add(op, make_cpu_kernel<BinaryKernel>);
}

}  // namespace kiln
