// add, sub, mul, div on the CPU with NumPy broadcasting, for f32 (other floats arrive as f32),
// i32 and i64.
#include <type_traits>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"
#include "core/error.h"

namespace kiln {

namespace {

enum class BinaryFn { Add, Sub, Mul, Div };

template <BinaryFn kFn, typename T>
T apply(T a, T b) {
  if constexpr (kFn == BinaryFn::Add) return a + b;
  if constexpr (kFn == BinaryFn::Sub) return a - b;
  if constexpr (kFn == BinaryFn::Mul) return a * b;
  if constexpr (kFn == BinaryFn::Div) {
    if constexpr (std::is_integral_v<T>) KILN_CHECK(b != 0, "[div] integer division by zero");
    return a / b;
  }
}

// One row of the output's last dim: each operand steps 1 (it has that dim) or 0 (broadcast).
template <BinaryFn kFn, typename T>
void row(const T* a, int64_t sa, const T* b, int64_t sb, T* o, int64_t n) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) o[i] = apply<kFn>(a[i], b[i]);
  } else if (sa) {
    const T v = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = apply<kFn>(a[i], v);
  } else if (sb) {
    const T v = a[0];
    for (int64_t i = 0; i < n; ++i) o[i] = apply<kFn>(v, b[i]);
  } else {
    const T v = apply<kFn>(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

// Whether an operand steps along the output's last dim (trailing dims align, NumPy style).
int64_t last_stride(const Shape& in, const Shape& out) { return !in.empty() && in.back() == out.back() ? 1 : 0; }

class BinaryKernel : public CpuKernel {
 public:
  BinaryKernel(const Graph& g, int node, const ConstantLookup&) {
    const std::string& op = g.nodes()[node].op;
    fn_ = op == "add" ? BinaryFn::Add : op == "sub" ? BinaryFn::Sub : op == "mul" ? BinaryFn::Mul : BinaryFn::Div;
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.inputs[1], &out = a.outputs[0];
    visit_numeric(out.dtype, "[" + a.node->op + "] " + a.node->name, [&](auto zero) {
      using T = decltype(zero);
      switch (fn_) {
        case BinaryFn::Add:
          return typed<BinaryFn::Add, T>(x, y, out);
        case BinaryFn::Sub:
          return typed<BinaryFn::Sub, T>(x, y, out);
        case BinaryFn::Mul:
          return typed<BinaryFn::Mul, T>(x, y, out);
        case BinaryFn::Div:
          return typed<BinaryFn::Div, T>(x, y, out);
      }
    });
  }

 private:
  // Row by row of the output's last dim: the broadcast index is worked out once a row, and each
  // row is a plain loop the compiler vectorises (a squeeze-excite gate, a bias, a residual).
  template <BinaryFn kFn, typename T>
  void typed(const TensorRef& x, const TensorRef& y, const TensorRef& out) {
    const T* a = x.as<const T>();
    const T* b = y.as<const T>();
    T* o = out.as<T>();
    const int64_t n = out.numel();
    if (n == 0) return;
    const int64_t width = out.shape.empty() ? 1 : out.shape.back(), rows = n / width;
    const int64_t sa = out.shape.empty() ? 1 : last_stride(x.shape, out.shape);
    const int64_t sb = out.shape.empty() ? 1 : last_stride(y.shape, out.shape);
    const BroadcastIndex ia(x.shape, out.shape), ib(y.shape, out.shape);
    auto one_row = [&](int64_t r) { row<kFn>(a + ia(r * width), sa, b + ib(r * width), sb, o + r * width, width); };
    // Integer division by zero throws, which must not happen inside an OpenMP region.
    if (n >= (1 << 15) && !(kFn == BinaryFn::Div && std::is_integral_v<T>)) {
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) one_row(r);
    } else {
      for (int64_t r = 0; r < rows; ++r) one_row(r);
    }
  }
  BinaryFn fn_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(binary) {
  for (const char* op : {"add", "sub", "mul", "div"}) registry.add(op, make_cpu_kernel<BinaryKernel>);
}

}  // namespace kiln
