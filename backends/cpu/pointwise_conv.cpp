#include "backends/cpu/activation.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void pointwise_conv(const float* x, const float* weight, const float* bias, float* y, const ConvShape& s,
                    Activation act) {
  const int64_t rows = static_cast<int64_t>(s.batch) * s.in_h * s.in_w;
  gemm_xwt(x, weight, y, rows, s.in_c, s.out_c);
  bias_activation(y, rows, s.out_c, bias, act);
}

}  // namespace kiln::cpu
