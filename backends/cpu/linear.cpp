#include <cblas.h>

#include "backends/cpu/activation.h"
#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void linear(const float* x, const float* weight, const float* bias, float* y, int batch, int in, int out, Activation act) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out, in, 1.0f, x, in, weight, in, 0.0f, y, out);
  bias_activation(y, batch, out, bias, act);
}

}  // namespace kiln::cpu
