// Whether pointers suit the vectorised kernels, which load and store 16 bytes at a time.
#pragma once

#include <cstdint>

namespace kiln::cuda {

template <typename... Pointers>
__host__ __device__ inline bool aligned16(const Pointers*... p) {
  return ((reinterpret_cast<uintptr_t>(p) % 16 == 0) && ...);
}

}  // namespace kiln::cuda
