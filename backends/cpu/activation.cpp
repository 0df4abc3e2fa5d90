#include "backends/cpu/activation.h"

namespace kiln::cpu {

// Built for AVX-512, AVX2 and the baseline, chosen when the program loads: the exp polynomial is
// most of a conv layer's time outside its GEMM.
__attribute__((target_clones("avx512f", "avx2", "default"))) void bias_activation_row(float* row, int channels,
                                                                                      const float* bias,
                                                                                      Activation act) {
  switch (act) {  // the switch sits outside the channel loop so that each loop vectorises
    case Activation::None:
      for (int c = 0; c < channels; ++c) row[c] += bias ? bias[c] : 0.0f;
      break;
    case Activation::SiLU:
      for (int c = 0; c < channels; ++c) {
        float v = row[c] + (bias ? bias[c] : 0.0f);
        row[c] = v / (1.0f + exp_approx(-v));
      }
      break;
    case Activation::Sigmoid:
      for (int c = 0; c < channels; ++c) row[c] = 1.0f / (1.0f + exp_approx(-(row[c] + (bias ? bias[c] : 0.0f))));
      break;
    default:
      for (int c = 0; c < channels; ++c) row[c] = apply_activation(row[c] + (bias ? bias[c] : 0.0f), act);
  }
}

void bias_activation(float* y, int64_t rows, int channels, const float* bias, Activation act) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) bias_activation_row(y + r * channels, channels, bias, act);
}

}  // namespace kiln::cpu
