// transpose on the CPU: elements of any type moved to their permuted places.
#include <cstring>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class TransposeKernel : public CpuKernel {
 public:
  TransposeKernel(const Graph& g, int node, const ConstantLookup&) : perm_(g.nodes()[node].attrs.get_ints("perm")) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const size_t es = dtype_size(x.dtype), rank = perm_.size();
    const auto xs = strides_of(x.shape);
    std::vector<int64_t> src_stride(rank);  // x's stride along each of y's dims
    for (size_t d = 0; d < rank; ++d) src_stride[d] = xs[perm_[d]];
    const auto* in = static_cast<const uint8_t*>(x.data);
    auto* out = static_cast<uint8_t*>(y.data);
    const int64_t n = y.numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = 0;
      for (size_t d = rank; d-- > 0;) {
        off += (rem % y.shape[d]) * src_stride[d];
        rem /= y.shape[d];
      }
      std::memcpy(out + i * es, in + off * es, es);
    }
  }

 private:
  std::vector<int64_t> perm_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(transpose) { registry.add("transpose", make_cpu_kernel<TransposeKernel>); }

}  // namespace kiln
