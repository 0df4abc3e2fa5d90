#include "backends/cpu/activation.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void linear(const float* x, const float* weight, const float* bias, float* y, int batch, int in, int out,
            Activation act) {
  gemm_xwt(x, weight, y, batch, in, out);
  bias_activation(y, batch, out, bias, act);
}

}  // namespace kiln::cpu
