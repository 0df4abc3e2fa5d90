// cast on the CPU: integers convert exactly between each other; everything else through f32.
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class CastKernel : public CpuKernel {
 public:
  CastKernel(const Graph&, int, const ConstantLookup&) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int64_t n = x.numel();
    if (x.dtype == DType::I64 && y.dtype == DType::I32) {
      for (int64_t i = 0; i < n; ++i) y.as<int32_t>()[i] = static_cast<int32_t>(x.as<const int64_t>()[i]);
    } else if (x.dtype == DType::I32 && y.dtype == DType::I64) {
      for (int64_t i = 0; i < n; ++i) y.as<int64_t>()[i] = x.as<const int32_t>()[i];
    } else if (x.dtype == y.dtype) {
      std::memcpy(y.data, x.data, y.bytes());
    } else {
      buf_.resize(static_cast<size_t>(n));
      convert_to_f32(x.dtype, x.data, buf_.data(), n);
      convert_from_f32(y.dtype, buf_.data(), y.data, n);
    }
  }

 private:
  std::vector<float> buf_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(cast) { registry.add("cast", make_cpu_kernel<CastKernel>); }

}  // namespace kiln
