// log_softmax's optional second input for both CPU kernels (reference and fast): per row the
// indices whose log-probability becomes -inf, -1 for none.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace kiln::cpu {

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
