#include "backends/cpu/log_softmax_bans.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln::cpu {

void log_softmax_row(const float* x, int64_t dim, float* out) {
  double max = -std::numeric_limits<double>::infinity(), sum = 0;
  for (int64_t j = 0; j < dim; ++j) max = std::max(max, static_cast<double>(x[j]));
  for (int64_t j = 0; j < dim; ++j) sum += std::exp(x[j] - max);
  const double log_sum = max + std::log(sum);
  for (int64_t j = 0; j < dim; ++j) out[j] = static_cast<float>(x[j] - log_sum);
}

LogSoftmaxBans::LogSoftmaxBans(const KernelArgs& a, int64_t rows, int64_t dim) {
  const TensorRef* banned = a.inputs.size() > 1 && a.inputs[1].data ? &a.inputs[1] : nullptr;
  per_row_ = banned ? banned->shape.back() : 0;
  index_.resize(static_cast<size_t>(rows * per_row_));
  for (size_t i = 0; i < index_.size(); ++i) {
    index_[i] = index_at(*banned, i);
    KILN_CHECK(index_[i] < dim, "[log_softmax] {}: banned index {} is past the {} scores", a.node->name, index_[i],
               dim);
  }
}

void LogSoftmaxBans::apply(int64_t r, float* out_row) const {
  for (int64_t b = 0; b < per_row_; ++b)
    if (index_[r * per_row_ + b] >= 0) out_row[index_[r * per_row_ + b]] = -std::numeric_limits<float>::infinity();
}

}  // namespace kiln::cpu
