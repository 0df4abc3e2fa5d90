#include "backends/cpu/copy.h"

#include <algorithm>
#include <cstring>

namespace kiln::cpu {

void parallel_copy(void* dst, const void* src, size_t bytes) {
  if (bytes < kParallelCopyBytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  constexpr size_t kChunk = size_t{256} << 10;
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t at = static_cast<size_t>(c) * kChunk;
    std::memcpy(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at, std::min(kChunk, bytes - at));
  }
}

}  // namespace kiln::cpu
