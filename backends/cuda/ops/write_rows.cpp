// write_rows on the GPU: rows of any element type copied by an index read from device memory
// (indexed_copy.cu). The output is normally target's own memory (the op is in place); where
// the engine gave it memory of its own, target is copied there first. An index past update's
// rows writes nothing for its row and sets the error word, so that the run fails as on the CPU.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/indexed_copy.cuh"
#include "core/dtype.h"

namespace kiln {

namespace {

bool supports_write_rows(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 2);
  return t == DType::I32 || t == DType::I64;
}

class WriteRowsKernel : public Kernel {
 public:
  explicit WriteRowsKernel(CudaKernelContext& c) : error_(c.error_word) { c.checks_inputs = true; }

  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &update = a.inputs[1], &index = a.inputs[2], &y = a.outputs[0];
    const cudaStream_t stream = stream_of(a);
    if (y.data != target.data)
      KILN_CUDA_CHECK(cudaMemcpyAsync(y.data, target.data, target.bytes(), cudaMemcpyDeviceToDevice, stream));
    cuda::WriteRowsArgs w;
    w.update = update.data;
    w.out = y.data;
    w.index = index.data;
    w.index_type = index.dtype;
    w.rows = target.shape[0];
    w.count = update.shape[0];
    w.elem_bytes = static_cast<int64_t>(dtype_size(target.dtype));
    w.rank = static_cast<int>(target.shape.size());
    for (int d = 1; d < w.rank; ++d) {
      w.out_dims[d - 1] = target.shape[d];
      w.update_dims[d - 1] = update.shape[d];
    }
    w.error = error_;
    w.error_bit = kCudaIndexOutOfRange;
    cuda::launch_write_rows(w, stream);
  }

 private:
  uint32_t* error_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(write_rows) {
  registry.add("write_rows", {supports_write_rows, make_cuda_kernel<WriteRowsKernel>, supports_write_rows});
}

}  // namespace kiln
