#include "graph/memory_plan.h"

#include <map>

#include "core/checked_math.h"

namespace kiln {

MemoryPlan plan_memory(const Graph& graph, int batch, int height, int width, const std::set<int>& keep,
                       int64_t element_alignment) {
  MemoryPlan plan;
  plan.dims = graph.infer_dims(height, width);
  const auto& nodes = graph.nodes();
  const int nv = static_cast<int>(graph.values().size());
  std::vector<int> last_use(nv, -1);
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
    for (int in : nodes[i].inputs) last_use[in] = i;
  for (int v : keep) last_use[v] = static_cast<int>(nodes.size());

  auto size_of = [&](int v) {
    int64_t n = static_cast<int64_t>(checked_mul(static_cast<uint64_t>(plan.dims[v].size()), batch, "activation size"));
    return (n + element_alignment - 1) / element_alignment * element_alignment;
  };
  plan.offset.assign(nv, -1);
  std::map<int64_t, int64_t> free_blocks;  // offset -> size, coalesced
  auto allocate = [&](int v) {
    int64_t need = size_of(v);
    plan.naive_elements += need;
    auto best = free_blocks.end();
    for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it)
      if (it->second >= need && (best == free_blocks.end() || it->second < best->second)) best = it;
    if (best != free_blocks.end()) {
      int64_t off = best->first, size = best->second;
      free_blocks.erase(best);
      if (size > need) free_blocks[off + need] = size - need;
      plan.offset[v] = off;
    } else {
      plan.offset[v] = plan.arena_elements;
      plan.arena_elements += need;
    }
  };
  auto release = [&](int v) {
    int64_t off = plan.offset[v], size = size_of(v);
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

  allocate(graph.input());
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    allocate(nodes[i].output);
    for (int in : std::set<int>(nodes[i].inputs.begin(), nodes[i].inputs.end()))
      if (last_use[in] == i) release(in);
    if (last_use[nodes[i].output] == -1) release(nodes[i].output);  // computed but never read
  }
  return plan;
}

}  // namespace kiln
