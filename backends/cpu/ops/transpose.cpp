// transpose on the CPU: elements of any type moved to their permuted places, row by row of the
// output's last dim (the source offset worked out once a row, then a fixed stride), rows over the
// threads. An NCHW image to NHWC is 3-element rows; a head split moves whole head rows.
#include <cstring>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

template <typename T>
void copy_rows(const T* in, T* out, const Shape& y, const std::vector<int64_t>& src_stride) {
  const size_t rank = y.size();
  const int64_t inner = y[rank - 1], step = src_stride[rank - 1];
  const int64_t rows = inner ? numel(y) / inner : 0;
#pragma omp parallel for schedule(static) if (rows * inner > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, off = 0;
    for (size_t d = rank - 1; d-- > 0;) {
      off += (rem % y[d]) * src_stride[d];
      rem /= y[d];
    }
    const T* src = in + off;
    T* dst = out + r * inner;
    for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * step];
  }
}

class TransposeKernel : public CpuKernel {
 public:
  TransposeKernel(const Graph& g, int node, const ConstantLookup&) : perm_(g.nodes()[node].attrs.get_ints("perm")) {}
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const size_t rank = perm_.size();
    if (rank == 0) {
      std::memcpy(y.data, x.data, dtype_size(x.dtype));
      return;
    }
    const auto xs = strides_of(x.shape);
    std::vector<int64_t> src_stride(rank);  // x's stride along each of y's dims
    for (size_t d = 0; d < rank; ++d) src_stride[d] = xs[perm_[d]];
    switch (dtype_size(x.dtype)) {
      case 1:
        return copy_rows(static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(y.data), y.shape, src_stride);
      case 2:
        return copy_rows(static_cast<const uint16_t*>(x.data), static_cast<uint16_t*>(y.data), y.shape, src_stride);
      case 4:
        return copy_rows(static_cast<const uint32_t*>(x.data), static_cast<uint32_t*>(y.data), y.shape, src_stride);
      default:
        return copy_rows(static_cast<const uint64_t*>(x.data), static_cast<uint64_t*>(y.data), y.shape, src_stride);
    }
  }

 private:
  std::vector<int64_t> perm_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(transpose) { registry.add("transpose", make_cpu_kernel<TransposeKernel>); }

}  // namespace kiln
