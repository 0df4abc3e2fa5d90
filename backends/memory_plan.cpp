#include "backends/memory_plan.h"

#include <algorithm>
#include <map>

#include "core/checked_math.h"

namespace kiln {

ArenaPlan plan_arena(const std::vector<MemoryBlock>& blocks, int64_t alignment) {
  ArenaPlan plan;
  plan.offset.assign(blocks.size(), -1);
  auto size_of = [&](size_t b) {
    const uint64_t n = checked_add(static_cast<uint64_t>(blocks[b].bytes), alignment - 1, "activation size");
    return static_cast<int64_t>(n / alignment * alignment);
  };
  // Events in step order: allocations of a step before its releases.
  std::vector<size_t> by_first(blocks.size()), by_last(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b) by_first[b] = by_last[b] = b;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return blocks[a].first < blocks[b].first; });
  std::stable_sort(by_last.begin(), by_last.end(), [&](size_t a, size_t b) { return blocks[a].last < blocks[b].last; });

  std::map<int64_t, int64_t> free_blocks;  // offset -> size, coalesced
  auto allocate = [&](size_t b) {
    const int64_t need = size_of(b);
    plan.naive_bytes += need;
    auto best = free_blocks.end();
    for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it)
      if (it->second >= need && (best == free_blocks.end() || it->second < best->second)) best = it;
    if (best != free_blocks.end()) {
      const int64_t off = best->first, size = best->second;
      free_blocks.erase(best);
      if (size > need) free_blocks[off + need] = size - need;
      plan.offset[b] = off;
    } else {
      plan.offset[b] = plan.bytes;
      plan.bytes = static_cast<int64_t>(checked_add(plan.bytes, need, "arena size"));
    }
  };
  auto release = [&](size_t b) {
    int64_t off = plan.offset[b], size = size_of(b);
    auto next = free_blocks.find(off + size);
    if (next != free_blocks.end()) {
      size += next->second;
      free_blocks.erase(next);
    }
    auto it = free_blocks.lower_bound(off);
    if (it != free_blocks.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == off) {
        prev->second += size;
        return;
      }
    }
    free_blocks[off] = size;
  };
  size_t a = 0, r = 0;
  while (a < by_first.size()) {
    const int step = blocks[by_first[a]].first;
    // Free what the previous steps read for the last time, then place this step's outputs.
    while (r < by_last.size() && blocks[by_last[r]].last < step) {
      if (blocks[by_last[r]].last != kLastStep) release(by_last[r]);
      ++r;
    }
    while (a < by_first.size() && blocks[by_first[a]].first == step) allocate(by_first[a++]);
  }
  return plan;
}

}  // namespace kiln
