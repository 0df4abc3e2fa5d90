#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void scale_channels(const float* x, const float* gate, float* y, int batch, int pixels, int channels) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < batch; ++n)
    for (int p = 0; p < pixels; ++p) {
      const int64_t base = (static_cast<int64_t>(n) * pixels + p) * channels;
      const float* g = gate + static_cast<int64_t>(n) * channels;
      for (int c = 0; c < channels; ++c) y[base + c] = x[base + c] * g[c];
    }
}

void add(const float* a, const float* b, float* y, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace kiln::cpu
