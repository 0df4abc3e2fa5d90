// y[r, n] = x[r, :] . w[n, :] for a few rows r (a decoder step: one row per beam): the weights
// [out, in] stream through once, output columns split over the threads. Measured on a greedy
// opus-mt-en-de step (2 Xeon cores): oneDNN's matmul 18.0 ms, this loop 12.3, OpenBLAS's sgemv
// 11.4; but OpenBLAS called from 16 threads at once serialises (121 ms a step, this loop 4.9).
// Weights may be IEEE half (an fp16 bundle's, read in place): a step is bound by the bytes of
// weights it streams, and widening them to f32 at load doubled those and the process's memory.
// Each product is the same f32 product as on the widened weights (half to float is exact).
#pragma once

#include <cstdint>

namespace kiln::cpu {

inline constexpr int64_t kGemvMaxRows = 8;

// rows <= kGemvMaxRows; y is [rows, out].
void gemv_rows(const float* x, const float* w, float* y, int64_t rows, int64_t in, int64_t out);
// The same with w as IEEE half bits.
void gemv_rows_f16(const float* x, const uint16_t* w, float* y, int64_t rows, int64_t in, int64_t out);

}  // namespace kiln::cpu
