// max_pool on CUDA: the generic window max (backends/cuda/max_pool.cuh), any float type, over
// the geometry graph/ops/max_pool.h resolves per shape of x.
#include "backends/cuda/max_pool.cuh"
#include "backends/cuda/cuda_kernel.h"
#include "graph/ops/max_pool.h"

namespace kiln {

namespace {

class MaxPoolKernel : public Kernel {
 public:
  explicit MaxPoolKernel(CudaKernelContext&) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const PoolGeometry g = max_pool_geometry(*a.node, x.shape);
    cuda::MaxPoolArgs p;
    p.x = x.data;
    p.y = y.data;
    p.type = x.dtype;
    p.n = g.n;
    p.h = g.h;
    p.w = g.w;
    p.c = g.c;
    p.oh = g.oh;
    p.ow = g.ow;
    p.kh = g.kh;
    p.kw = g.kw;
    p.stride_h = g.stride_h;
    p.stride_w = g.stride_w;
    p.pad_top = g.pad_top;
    p.pad_left = g.pad_left;
    cuda::launch_max_pool(p, stream_of(a));
  }
};

bool supports_max_pool(const Graph& g, const Node& n) {
  return io_types_in(g, n, {DType::F32, DType::F16, DType::BF16, DType::F8E4M3});
}

}  // namespace

KILN_REGISTER_CUDA_KERNELS(max_pool) {
  registry.add("max_pool", {supports_max_pool, make_cuda_kernel<MaxPoolKernel>, supports_max_pool});
}

}  // namespace kiln
