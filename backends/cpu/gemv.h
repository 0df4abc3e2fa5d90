// y[r, n] = x[r, :] . w[n, :] for a few rows r (a decoder step: one row per beam): the weights
// [out, in] stream through once, output columns split over the threads. oneDNN's matmul read them
// at about 60% of this speed for one row, and OpenBLAS's sgemv called from many threads at once
// serialises on its buffer lock (a Marian step took 48 ms on 16 threads).
#pragma once

#include <cstdint>

namespace kiln::cpu {

inline constexpr int64_t kGemvMaxRows = 8;

// rows <= kGemvMaxRows; y is [rows, out].
void gemv_rows(const float* x, const float* w, float* y, int64_t rows, int64_t in, int64_t out);

}  // namespace kiln::cpu
