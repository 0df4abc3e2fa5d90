// add, sub, mul, div on CUDA: the generic broadcasting kernel (backends/cuda/binary.cuh) for
// f32, f16, bf16 (fp32 math), i32 and i64.
#include "backends/cuda/binary.cuh"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/strided.h"

namespace kiln {

namespace {

cuda::BinaryFn binary_fn(const std::string& op) {
  if (op == "add") return cuda::BinaryFn::Add;
  if (op == "sub") return cuda::BinaryFn::Sub;
  if (op == "mul") return cuda::BinaryFn::Mul;
  return cuda::BinaryFn::Div;
}

class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(CudaKernelContext& c) : fn_(binary_fn(c.node.op)) {}
  void run(const KernelArgs& args, int) override {
    const TensorRef &a = args.inputs[0], &b = args.inputs[1], &out = args.outputs[0];
    const auto views = cuda::strided_views<2>(
        out.shape, {cuda::broadcast_strides(a.shape, out.shape), cuda::broadcast_strides(b.shape, out.shape)});
    cuda::BinaryArgs p;
    p.fn = fn_;
    p.type = out.dtype;
    p.a = a.data;
    p.b = b.data;
    p.out = out.data;
    p.ia = views[0];
    p.ib = views[1];
    p.n = out.numel();
    cuda::launch_binary(p, stream_of(args));
  }

 private:
  cuda::BinaryFn fn_;
};

bool supports_binary(const Graph& g, const Node& n) {
  return io_types_in(g, n, {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64});
}

}  // namespace

KILN_REGISTER_CUDA_KERNELS(binary) {
  for (const char* op : {"add", "sub", "mul", "div"})
    registry.add(op, {supports_binary, make_cuda_kernel<BinaryKernel>, supports_binary});
}

}  // namespace kiln
