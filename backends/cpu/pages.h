// Memory for large CPU buffers (states, a plan's activations, packed weights) in 2 MiB pages
// where the kernel allows it (transparent huge pages in "madvise" mode, as Debian ships them):
// a buffer is first written during a model's first call, and on a virtual machine each 4 KiB
// page fault costs a few microseconds; a decoder's first beam step touched about 500 MB.
#pragma once

#include <cstddef>
#include <memory>

namespace kiln::cpu {

// Buffers of at least this many bytes get huge pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// At least `bytes` (64-byte aligned; 2 MiB aligned from kHugePageBytes on), freed by std::free.
void* allocate_pages(size_t bytes);

struct FreeDeleter {
  void operator()(void* p) const;
};
using PageBuffer = std::unique_ptr<void, FreeDeleter>;

}  // namespace kiln::cpu
