// Activation memory: blocks used over intervals of a run's steps share one arena where their
// intervals do not overlap (best fit over a coalescing free list). An engine plans one arena
// per backend and set of sizes.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

struct MemoryBlock {
  int64_t bytes = 0;
  int first = 0;  // the step that writes it (-1: before the first step, e.g. a graph input)
  int last = 0;   // the last step that reads it (kLastStep: kept after the run)
};
inline constexpr int kLastStep = 1 << 30;

struct ArenaPlan {
  std::vector<int64_t> offset;  // per block
  int64_t bytes = 0;            // the arena's size
  int64_t naive_bytes = 0;      // one buffer per block, for reporting
};

// A step's outputs are placed before its inputs are freed, so no step writes over what it reads.
ArenaPlan plan_arena(const std::vector<MemoryBlock>& blocks, int64_t alignment);

}  // namespace kiln
