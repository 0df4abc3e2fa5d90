// where on the CPU: elements of any type, each picked from a or b through NumPy broadcasting.
#include <cstring>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class WhereKernel : public CpuKernel {
 public:
  WhereKernel(const Graph&, int, const ConstantLookup&) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& args, int) override {
    const TensorRef &cond = args.inputs[0], &a = args.inputs[1], &b = args.inputs[2], &y = args.outputs[0];
    const size_t es = dtype_size(y.dtype);
    const auto* c = cond.as<const uint8_t>();
    const auto *pa = a.as<const uint8_t>(), *pb = b.as<const uint8_t>();
    auto* out = y.as<uint8_t>();
    const BroadcastIndex ic(cond.shape, y.shape), ia(a.shape, y.shape), ib(b.shape, y.shape);
    const int64_t n = y.numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * es, c[ic(i)] ? pa + ia(i) * es : pb + ib(i) * es, es);
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(where) { registry.add("where", make_cpu_kernel<WhereKernel>); }

}  // namespace kiln
