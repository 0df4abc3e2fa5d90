// Scratch memory the fast CPU kernels share, one buffer per purpose and thread: kernels run one
// at a time on a thread, so a single buffer serves every kernel of an engine. Why not a buffer per
// kernel: an image classifier's gated convolutions each kept a copy of their input, 100 MB more
// resident memory at batch 8, and at batch 1 one shared buffer stays in the caches between
// layers where sixteen distinct ones do not.
#pragma once

#include <cstddef>

namespace kiln::cpu {

enum class Scratch {
  Onednn,  // oneDNN primitives' scratchpads
  Input,   // a kernel's input transformed before a primitive reads it
  Count
};

// `bytes` of memory aligned to 64 bytes, valid on the calling thread until the next call with the
// same purpose; grown as needed and kept. Throws std::bad_alloc when memory runs out.
void* scratch(Scratch purpose, size_t bytes);

}  // namespace kiln::cpu
