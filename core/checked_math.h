// Overflow-checked size arithmetic for sizes read from untrusted files.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/error.h"

namespace kiln {

inline uint64_t checked_add(uint64_t a, uint64_t b, const char* what) {
  uint64_t r;
  KILN_CHECK(!__builtin_add_overflow(a, b, &r), "[size] {} overflows", what);
  return r;
}

inline uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
  uint64_t r;
  KILN_CHECK(!__builtin_mul_overflow(a, b, &r), "[size] {} overflows", what);
  return r;
}

// Number of elements of a shape; every dimension must be non-negative.
inline uint64_t checked_numel(std::span<const int64_t> shape, const char* what) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    KILN_CHECK(d >= 0, "[size] {} has a negative dimension", what);
    n = checked_mul(n, static_cast<uint64_t>(d), what);
  }
  return n;
}

}  // namespace kiln
