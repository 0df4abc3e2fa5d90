// y[rows, out] = x[rows, in] * w[out, in]^T through OpenBLAS, split over OpenMP threads (by rows,
// or, where there are fewer rows than outputs, by output columns).
// OpenBLAS itself is kept single-threaded: its own thread pool and OpenMP's spinning workers
// fought over the cores (p90 latency 10x the median on 2 cores), so kiln owns all threading.
#pragma once

#include <cstdint>

namespace kiln::cpu {

void gemm_xwt(const float* x, const float* w, float* y, int64_t rows, int in, int out);

}  // namespace kiln::cpu
