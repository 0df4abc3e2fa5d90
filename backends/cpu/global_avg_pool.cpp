#include <vector>

#include "backends/cpu/kernels.h"

namespace kiln::cpu {

void global_avg_pool(const float* x, float* y, int batch, int pixels, int channels) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < batch; ++n) {
    std::vector<double> sum(channels, 0.0);  // double: the sum runs over up to 10^4 pixels
    const float* px = x + static_cast<int64_t>(n) * pixels * channels;
    for (int p = 0; p < pixels; ++p)
      for (int c = 0; c < channels; ++c) sum[c] += px[static_cast<int64_t>(p) * channels + c];
    for (int c = 0; c < channels; ++c) y[static_cast<int64_t>(n) * channels + c] = static_cast<float>(sum[c] / pixels);
  }
}

}  // namespace kiln::cpu
