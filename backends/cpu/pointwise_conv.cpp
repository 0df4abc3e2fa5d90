#include <cblas.h>

#include "backends/cpu/activation.h"
#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void pointwise_conv(const float* x, const float* weight, const float* bias, float* y, const ConvShape& s, Activation act) {
  const int64_t rows = static_cast<int64_t>(s.batch) * s.in_h * s.in_w;
  // y[rows, out] = x[rows, in] * weight[out, in]^T
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), s.out_c, s.in_c, 1.0f, x, s.in_c, weight,
              s.in_c, 0.0f, y, s.out_c);
  bias_activation(y, rows, s.out_c, bias, act);
}

}  // namespace kiln::cpu
