// upsample_nearest on the CPU: elements of any type; each output pixel's C channels copied from
// its source pixel.
#include <cstring>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class UpsampleNearestKernel : public CpuKernel {
 public:
  UpsampleNearestKernel(const Graph& g, int node, const ConstantLookup&) {
    const auto& s = g.nodes()[node].attrs.get_ints("scale");
    sh_ = s[0];
    sw_ = s[1];
  }
  bool any_dtype() const override { return true; }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], oh = y.shape[1], ow = y.shape[2];
    const size_t pixel = static_cast<size_t>(x.shape[3]) * dtype_size(x.dtype);
    if (y.numel() == 0) return;
    const auto* in = static_cast<const uint8_t*>(x.data);
    auto* out = static_cast<uint8_t*>(y.data);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < oh; ++i) {
        const uint8_t* src = in + (b * h + i / sh_) * w * pixel;
        uint8_t* dst = out + (b * oh + i) * ow * pixel;
        for (int64_t j = 0; j < ow; ++j) std::memcpy(dst + j * pixel, src + (j / sw_) * pixel, pixel);
      }
  }

 private:
  int64_t sh_ = 1, sw_ = 1;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(upsample_nearest) {
  registry.add("upsample_nearest", make_cpu_kernel<UpsampleNearestKernel>);
}

}  // namespace kiln
