// The CPU reference's layer norm, for layer_norm and norm_linear: per row, the mean and then the
// variance about it in double (two passes: no cancellation when the mean is large against the
// spread). gamma and beta may be null.
#pragma once

#include <cmath>
#include <cstdint>

namespace kiln::cpu {

inline void layer_norm_rows(const float* in, const float* gamma, const float* beta, int64_t rows, int64_t d, double eps,
                            float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = in + r * d;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += xr[i];
    mean /= static_cast<double>(d);
    for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(d) + eps);
    for (int64_t i = 0; i < d; ++i) {
      const double y = (xr[i] - mean) * inv * (gamma ? gamma[i] : 1.0) + (beta ? beta[i] : 0.0);
      out[r * d + i] = static_cast<float>(y);
    }
  }
}

}  // namespace kiln::cpu
