// Large copies split over the threads: one core's memcpy reaches a fraction of the memory
// bandwidth, and a decoder's key/value caches (hundreds of MB a step under beam search) are
// copied whole.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::cpu {

// Below this many bytes a copy stays on the calling thread.
inline constexpr size_t kParallelCopyBytes = size_t{1} << 20;

void parallel_copy(void* dst, const void* src, size_t bytes);

}  // namespace kiln::cpu
