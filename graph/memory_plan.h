// Activation memory planning shared by backends: every value gets an offset in one arena;
// values whose lifetimes do not overlap share memory. A backend plans over its own list of
// steps (a fused kernel reads and writes several values), planned once per input size.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "graph/graph.h"

namespace kiln {

struct MemoryStep {
  std::vector<int> inputs, outputs;
};

struct MemoryPlan {
  std::vector<Dims> dims;       // per-image dims of every value
  std::vector<int64_t> offset;  // element offset of every value in the arena (-1: never stored)
  int64_t arena_elements = 0;   // arena size in elements
  int64_t naive_elements = 0;   // what one buffer per stored value would take, for reporting
};

// One step per graph node.
std::vector<MemoryStep> node_steps(const Graph& graph);

// `keep` lists values that must stay readable after the run (the output, requested taps).
// `element_alignment` rounds every offset (e.g. 16 floats = 64 bytes).
MemoryPlan plan_memory(const Graph& graph, const std::vector<MemoryStep>& steps, int batch, int height, int width,
                       const std::set<int>& keep, int64_t element_alignment = 16);

}  // namespace kiln
