// pad on the CPU: elements of any type. Each row of the output (its last dim) is either all
// padding or padding, a row of x, padding.
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class PadKernel : public CpuKernel {
 public:
  PadKernel(const Graph& g, int node, const ConstantLookup&) {
    const Node& n = g.nodes()[node];
    pads_ = n.attrs.get_ints("pads");
    value_ = n.attrs.get_float("value");
  }
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const size_t es = dtype_size(x.dtype), rank = x.shape.size();
    if (rank == 0) {
      std::memcpy(y.data, x.data, es);
      return;
    }
    const int64_t n = y.numel();
    if (n == 0) return;
    // Integers from the double itself: f32 would round those past 2^24.
    std::vector<uint8_t> fill(es);
    if (x.dtype == DType::I32) {
      const auto v = static_cast<int32_t>(value_);
      std::memcpy(fill.data(), &v, es);
    } else if (x.dtype == DType::I64) {
      const auto v = static_cast<int64_t>(value_);
      std::memcpy(fill.data(), &v, es);
    } else {
      const auto v = static_cast<float>(value_);
      convert_from_f32(x.dtype, &v, fill.data(), 1);
    }
    const int64_t y_row = y.shape[rank - 1], x_row = x.shape[rank - 1], begin = pads_[rank - 1];
    const int64_t rows = n / y_row;
    const auto xs = strides_of(Shape(x.shape.begin(), x.shape.end() - 1));  // counted in rows
    const auto* in = static_cast<const uint8_t*>(x.data);
    auto* out = static_cast<uint8_t*>(y.data);
    auto pad = [&](uint8_t* p, int64_t count) {
      for (int64_t i = 0; i < count; ++i) std::memcpy(p + i * es, fill.data(), es);
    };
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      // The x row this output row shows, if any: its coordinates over the dims but the last.
      int64_t rem = r, src = 0;
      bool inside = x_row > 0;
      for (size_t d = rank - 1; d-- > 0;) {
        const int64_t c = rem % y.shape[d] - pads_[d];
        rem /= y.shape[d];
        inside = inside && c >= 0 && c < x.shape[d];
        src += c * xs[d];
      }
      uint8_t* dst = out + r * y_row * es;
      if (!inside) {
        pad(dst, y_row);
        continue;
      }
      pad(dst, begin);
      std::memcpy(dst + begin * es, in + src * x_row * es, static_cast<size_t>(x_row) * es);
      pad(dst + (begin + x_row) * es, y_row - begin - x_row);
    }
  }

 private:
  std::vector<int64_t> pads_;
  double value_ = 0;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(pad) { registry.add("pad", make_cpu_kernel<PadKernel>); }

}  // namespace kiln
