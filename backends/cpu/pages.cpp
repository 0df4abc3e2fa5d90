#include "backends/cpu/pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace kiln::cpu {

void* allocate_pages(size_t bytes) {
  if (bytes >= kHugePageBytes) {
    const size_t size = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, size);
    KILN_CHECK(p, "[cpu] out of memory allocating {} bytes", bytes);
    madvise(p, size, MADV_HUGEPAGE);  // advice only: where it is refused, 4 KiB pages serve
    return p;
  }
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  KILN_CHECK(p, "[cpu] out of memory allocating {} bytes", bytes);
  return p;
}

void FreeDeleter::operator()(void* p) const { std::free(p); }

}  // namespace kiln::cpu
