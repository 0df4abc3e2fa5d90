// softmax on the GPU: a block per row along the axis (softmax.cu), x f32 or f16 and a mask of
// either type that broadcasts to x. The mask's index map is x's shape with size-1 dims dropped
// and neighbours merged where the mask walks them as one dim, which leaves a handful of dims
// for any real mask ([B, 1, Sq, Sk] against [B, H, Sq, Sk]: three).
#include <utility>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/softmax.cuh"
#include "core/error.h"

namespace kiln {

namespace {

bool supports_softmax(const Graph& g, const Node& n) { return io_types_in(g, n, {DType::F32, DType::F16}); }

class SoftmaxKernel : public Kernel {
 public:
  explicit SoftmaxKernel(CudaKernelContext& c) : axis_(c.node.attrs.get_int("axis")) {}

  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[0];
    const Shape& xs = x.shape;
    const int axis = normalize_axis(axis_, xs.size(), "[softmax] " + a.node->name);
    cuda::SoftmaxArgs p;
    p.x = x.data;
    p.y = a.outputs[0].data;
    p.type = x.dtype;
    p.outer = 1;
    p.inner = 1;
    for (int d = 0; d < axis; ++d) p.outer *= xs[d];
    for (size_t d = axis + 1; d < xs.size(); ++d) p.inner *= xs[d];
    p.dim = xs[axis];
    if (a.inputs.size() > 1 && a.inputs[1].data) {
      const TensorRef& mask = a.inputs[1];
      p.mask = mask.data;
      p.mask_type = mask.dtype;
      // The mask's stride per dim of x (its dims aligned to the right; 0 where it broadcasts).
      const Shape& ms = mask.shape;
      std::vector<int64_t> stride(xs.size(), 0);
      int64_t step = 1;
      for (size_t d = ms.size(); d-- > 0;) {
        stride[d + xs.size() - ms.size()] = ms[d] == 1 ? 0 : step;
        step *= ms[d];
      }
      p.mask_axis_stride = stride[axis];
      std::vector<std::pair<int64_t, int64_t>> dims;  // (size, mask stride), merged
      for (size_t d = 0; d < xs.size(); ++d) {
        if (xs[d] == 1) continue;
        if (!dims.empty() && dims.back().second == stride[d] * xs[d])
          dims.back() = {dims.back().first * xs[d], stride[d]};
        else
          dims.emplace_back(xs[d], stride[d]);
      }
      KILN_CHECK(dims.size() <= cuda::kSoftmaxMaxMaskRank,
                 "[softmax] {}: mask {} broadcasts to x {} over more than {} separate dims", a.node->name,
                 to_string(ms), to_string(xs), cuda::kSoftmaxMaxMaskRank);
      p.mask_index.rank = static_cast<int>(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        p.mask_index.dims[d] = dims[d].first;
        p.mask_index.strides[d] = dims[d].second;
      }
    }
    cuda::launch_softmax(p, stream_of(a));
  }

 private:
  int64_t axis_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(softmax) {
  registry.add("softmax", {supports_softmax, make_cuda_kernel<SoftmaxKernel>, supports_softmax});
}

}  // namespace kiln
