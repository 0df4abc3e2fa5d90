// oneDNN for the fast CPU kernels (backends/cpu/fast/): one CPU engine per process, a stream per
// thread, and kiln's activations as oneDNN post-ops. oneDNN (Debian's build) runs its primitives
// on OpenMP, the same thread pool as the reference kernels' loops.
#pragma once

#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/pages.h"
#include "graph/ops/activation.h"

namespace kiln::cpu {

dnnl::engine& onednn_engine();
dnnl::stream& onednn_stream();

// Primitive attributes with the scratchpad left to the caller (by default oneDNN allocates it
// for each execution and frees it after).
dnnl::primitive_attr onednn_attr(const dnnl::post_ops& ops);
// A scratchpad for `pd` on the calling thread (cpu/scratch.h: primitives run synchronously, one
// at a time per thread).
dnnl::memory onednn_scratchpad(const dnnl::memory::desc& scratchpad_desc);

// A copy of weights stored as `stored` (at `data`) in `layout`, the blocked layout a primitive
// picked for them: reordered once at load, into memory of its own (cpu/pages.h).
class PackedWeights {
 public:
  PackedWeights(const dnnl::memory::desc& stored, const void* data, const dnnl::memory::desc& layout);
  const dnnl::memory& memory() const { return memory_; }

 private:
  PageBuffer storage_;
  dnnl::memory memory_;  // on storage_
};

// Appends `act` to `ops` as an eltwise post-op; false for an activation oneDNN has no exact
// counterpart of (the caller then declines the node).
bool append_activation(dnnl::post_ops& ops, Activation act);

}  // namespace kiln::cpu
