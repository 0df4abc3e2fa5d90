#include "backends/cpu/scratch.h"

#include <cstdlib>
#include <memory>
#include <new>

namespace kiln::cpu {

void* scratch(Scratch purpose, size_t bytes) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  struct Buffer {
    std::unique_ptr<void, Free> data;
    size_t capacity = 0;
  };
  thread_local Buffer buffers[static_cast<int>(Scratch::Count)];
  Buffer& b = buffers[static_cast<int>(purpose)];
  if (bytes > b.capacity || !b.data) {
    const size_t rounded = (bytes / 64 + 1) * 64;  // aligned_alloc wants a multiple of the alignment
    b.data.reset();                                // the old buffer goes first: the two need not fit at once
    b.capacity = 0;
    b.data.reset(std::aligned_alloc(64, rounded));
    if (!b.data) throw std::bad_alloc();
    b.capacity = rounded;
  }
  return b.data.get();
}

}  // namespace kiln::cpu
