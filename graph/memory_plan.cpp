#include "graph/memory_plan.h"

#include <map>

#include "core/checked_math.h"

namespace kiln {

std::vector<MemoryStep> node_steps(const Graph& graph) {
  std::vector<MemoryStep> steps;
  for (const auto& n : graph.nodes()) steps.push_back({n.inputs, {n.output}});
  return steps;
}

MemoryPlan plan_memory(const Graph& graph, const std::vector<MemoryStep>& steps, int batch, int height, int width,
                       const std::set<int>& keep, int64_t element_alignment) {
  MemoryPlan plan;
  plan.dims = graph.infer_dims(height, width);
  const int nv = static_cast<int>(graph.values().size());
  const int ns = static_cast<int>(steps.size());
  std::vector<int> last_use(nv, -1);
  for (int i = 0; i < ns; ++i)
    for (int in : steps[i].inputs) last_use[in] = i;
  for (int v : keep) last_use[v] = ns;

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

  // Outputs are allocated before the step's inputs are released, so no step writes over what it reads.
  allocate(graph.input());
  for (int i = 0; i < ns; ++i) {
    for (int out : steps[i].outputs) allocate(out);
    for (int in : std::set<int>(steps[i].inputs.begin(), steps[i].inputs.end()))
      if (last_use[in] == i) release(in);
    for (int out : steps[i].outputs)
      if (last_use[out] == -1) release(out);  // computed but never read
  }
  return plan;
}

}  // namespace kiln
