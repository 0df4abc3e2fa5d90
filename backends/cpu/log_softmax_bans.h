// What log_softmax's CPU kernels share: the optional second input (reference and fast kernels,
// and log_softmax_topk's): per row the indices whose log-probability becomes -inf, -1 for none;
// and the reference arithmetic of one row.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace kiln::cpu {

// out[j] = x[j] - log(sum(exp(x))) over one row of dim scores, the max and the sum of
// exponentials in double (the reference kernels of log_softmax and log_softmax_topk).
void log_softmax_row(const float* x, int64_t dim, float* out);

class LogSoftmaxBans {
 public:
  // Reads the bans for `rows` rows of `dim` scores (none where the input is absent), each
  // checked to lie below `dim` before anything is written.
  LogSoftmaxBans(const KernelArgs& a, int64_t rows, int64_t dim);
  // Sets row r's banned entries of `out_row` to -inf.
  void apply(int64_t r, float* out_row) const;

 private:
  int64_t per_row_ = 0;
  std::vector<int64_t> index_;
};

}  // namespace kiln::cpu
