// write_rows on the GPU: rows of any element type copied by an index read from device memory
// (indexed_copy.cu), in place on target (indexed_write.h). An index past update's rows writes
// nothing for its row and sets the error word, so that the run fails as on the CPU.
#include "backends/cuda/indexed_copy.cuh"
#include "backends/cuda/ops/indexed_write.h"
#include "core/dtype.h"

namespace kiln {

namespace {

class WriteRowsKernel : public Kernel {
 public:
  explicit WriteRowsKernel(CudaKernelContext& c) : error_(c.error_word) { c.checks_inputs = true; }

  void run(const KernelArgs& a, int) override {
    const TensorRef &target = a.inputs[0], &update = a.inputs[1], &index = a.inputs[2], &y = a.outputs[0];
    const cudaStream_t stream = stream_of(a);
    copy_target_unless_in_place(target, y, stream);
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
  registry.add("write_rows", {supports_indexed_write, make_cuda_kernel<WriteRowsKernel>, supports_indexed_write});
}

}  // namespace kiln
