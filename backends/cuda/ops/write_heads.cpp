// write_heads on the GPU: a projection's heads copied into the rows of a state by an index read
// from device memory (indexed_copy.cu). The output is normally target's own memory (the op is in
// place); where the engine gave it memory of its own, target is copied there first. An index
// past the source's rows writes nothing for its row and sets the error word, so that the run
// fails as on the CPU.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/indexed_copy.cuh"
#include "core/dtype.h"

namespace kiln {

namespace {

bool supports_write_heads(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 2);
  return t == DType::I32 || t == DType::I64;
}

class WriteHeadsKernel : public Kernel {
 public:
  explicit WriteHeadsKernel(CudaKernelContext& c) : column_(c.node.attrs.get_int("column")), error_(c.error_word) {
    c.checks_inputs = true;
  }

  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &source = a.inputs[1], &index = a.inputs[2], &y = a.outputs[0];
    const cudaStream_t stream = stream_of(a);
    if (y.data != target.data)
      KILN_CUDA_CHECK(cudaMemcpyAsync(y.data, target.data, target.bytes(), cudaMemcpyDeviceToDevice, stream));
    cuda::WriteHeadsArgs w;
    w.source = source.data;
    w.out = y.data;
    w.index = index.data;
    w.index_type = index.dtype;
    w.rows = target.shape[0];
    w.heads = target.shape[1];
    w.capacity = target.shape[2];
    w.d = target.shape[3];
    w.count = source.shape[0];
    w.positions = source.shape[1];
    w.width = source.shape[2];
    w.column = column_;
    w.elem_bytes = static_cast<int64_t>(dtype_size(target.dtype));
    w.error = error_;
    w.error_bit = kCudaIndexOutOfRange;
    cuda::launch_write_heads(w, stream);
  }

 private:
  int64_t column_;
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(write_heads) {
  registry.add("write_heads", {supports_write_heads, make_cuda_kernel<WriteHeadsKernel>, supports_write_heads});
}

}  // namespace kiln
