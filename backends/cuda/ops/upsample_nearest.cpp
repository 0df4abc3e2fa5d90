// upsample_nearest on CUDA: one strided copy (backends/cuda/movement.cuh) of any element type.
// y [N, H * sh, W * sw, C] is y viewed as [N, H, sh, W, sw, C], whose element (n, i, r, j, s, c)
// is x[n, i, j, c]: the repeat dims read x with stride 0.
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class UpsampleNearestKernel : public Kernel {
 public:
  explicit UpsampleNearestKernel(CudaKernelContext& c) {
    const auto& s = c.node.attrs.get_ints("scale");
    sh_ = s[0];
    sw_ = s[1];
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
    const Shape walk = {n, h, sh_, w, sw_, c};
    const auto views =
        cuda::strided_views<2>(walk, {cuda::Strides{h * w * c, w * c, 0, c, 0, 1}, cuda::row_major_strides(walk)});
    cuda::StridedCopyArgs args;
    args.x = x.data;
    args.src = views[0];
    args.y = y.data;
    args.dst = views[1];
    args.n = y.numel();
    args.elem_size = static_cast<int>(dtype_size(x.dtype));
    cuda::launch_strided_copy(args, stream_of(a));
  }

 private:
  int64_t sh_ = 1, sw_ = 1;
};

bool supports_upsample_nearest(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(upsample_nearest) {
  registry.add("upsample_nearest",
               {supports_upsample_nearest, make_cuda_kernel<UpsampleNearestKernel>, supports_upsample_nearest});
}

}  // namespace kiln
