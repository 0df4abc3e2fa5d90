// pad on CUDA (backends/cuda/movement.cuh): any element type; each output element is x's
// element at its coordinates minus the begin pads, or the fill value.
#include <cstring>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class PadKernel : public Kernel {
 public:
  explicit PadKernel(CudaKernelContext& c) : pads_(c.node.attrs.get_ints("pads")) {
    const double value = c.node.attrs.get_float("value");
    const DType t = c.graph.values()[c.node.inputs[0]].dtype;
    // Integers from the double itself, as the CPU reference: f32 would round those past 2^24.
    if (t == DType::I32) {
      const auto v = static_cast<int32_t>(value);
      std::memcpy(&fill_, &v, sizeof v);
    } else if (t == DType::I64) {
      const auto v = static_cast<int64_t>(value);
      std::memcpy(&fill_, &v, sizeof v);
    } else {
      const auto v = static_cast<float>(value);
      convert_from_f32(t, &v, &fill_, 1);  // the low bytes of fill_ (little-endian)
    }
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const size_t rank = x.shape.size();
    KILN_CHECK(rank <= static_cast<size_t>(cuda::kMaxRank), "[pad] {}: rank {} is over {}", a.node->name, rank,
               cuda::kMaxRank);
    const cuda::Strides xs = cuda::row_major_strides(x.shape);
    cuda::PadIndex p;
    p.rank = static_cast<int>(rank);
    for (size_t d = 0; d < rank; ++d) {
      p.size[d] = y.shape[d];
      p.begin[d] = pads_[d];
      p.x_size[d] = x.shape[d];
      p.x_stride[d] = xs[d];
    }
    cuda::launch_pad(x.data, y.data, y.numel(), static_cast<int>(dtype_size(x.dtype)), p, fill_, stream_of(a));
  }

 private:
  std::vector<int64_t> pads_;
  uint64_t fill_ = 0;
};

bool supports_pad(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(pad) { registry.add("pad", {supports_pad, make_cuda_kernel<PadKernel>, supports_pad}); }

}  // namespace kiln
