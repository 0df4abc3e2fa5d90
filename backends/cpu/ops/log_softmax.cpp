// log_softmax on the CPU: each row's max and sum of exponentials in double, then the bans
// (every banned index checked first).
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/log_softmax_bans.h"

namespace kiln {

namespace {

class LogSoftmaxKernel : public CpuKernel {
 public:
  LogSoftmaxKernel(const Graph&, int, const ConstantLookup&) {}
  void run(const KernelArgs& a, int) override {
    const TensorRef &x = a.inputs[0], &y = a.outputs[0];
    const int64_t dim = x.shape.back(), rows = x.numel() / dim;
    const float* in = x.as<const float>();  // float inputs arrive as f32
    float* out = y.as<float>();
    const cpu::LogSoftmaxBans bans(a, rows, dim);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      cpu::log_softmax_row(in + r * dim, dim, out + r * dim);
      bans.apply(r, out + r * dim);
    }
  }
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(log_softmax) { registry.add("log_softmax", make_cpu_kernel<LogSoftmaxKernel>); }

}  // namespace kiln
