// transpose on CUDA: one strided copy (backends/cuda/movement.cuh) of any element type, y's
// dim d read along x's dim perm[d].
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/strided.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(CudaKernelContext& c) : perm_(c.node.attrs.get_ints("perm")) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const cuda::Strides xs = cuda::row_major_strides(x.shape);
    cuda::Strides src(perm_.size());
    for (size_t d = 0; d < perm_.size(); ++d) src[d] = xs[perm_[d]];
    const auto views = cuda::strided_views<2>(y.shape, {src, cuda::row_major_strides(y.shape)});
    cuda::StridedCopyArgs c;
    c.x = x.data;
    c.src = views[0];
    c.y = y.data;
    c.dst = views[1];
    c.n = y.numel();
    c.elem_size = static_cast<int>(dtype_size(x.dtype));
    cuda::launch_strided_copy(c, stream_of(a));
  }

 private:
  std::vector<int64_t> perm_;
};

bool supports_transpose(const Graph&, const Node&) { return true; }

}  // namespace

KILN_REGISTER_CUDA_KERNELS(transpose) {
  registry.add("transpose", {supports_transpose, make_cuda_kernel<TransposeKernel>, supports_transpose});
}

}  // namespace kiln
