#include "backends/placement.h"

#include <set>

#include "core/error.h"

namespace kiln {

namespace {

// A view: every output is the memory of input 0, and input 0 is not a state (an in-place state
// update stays with its state).
bool is_view(const Graph& g, const Node& n) {
  const OpDef& def = n.def();
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (def.aliases_input(static_cast<int>(o)) != 0) return false;
  return !n.inputs.empty() && n.inputs[0] >= 0 && g.values()[n.inputs[0]].kind != ValueKind::State;
}

}  // namespace

std::vector<std::string> value_devices(const Graph& g) {
  std::vector<std::string> dev(g.values().size());
  for (const Node& n : g.nodes())
    for (int v : n.outputs) dev[v] = n.device;
  const auto consumers = g.consumers();
  for (size_t v = 0; v < g.values().size(); ++v) {
    const ValueKind kind = g.values()[v].kind;
    if (kind != ValueKind::Input && kind != ValueKind::State) continue;
    dev[v] = "cpu";
    for (int c : consumers[v])
      if (g.nodes()[c].device != "cpu") dev[v] = g.nodes()[c].device;
    // An input no node reads (one that only sizes a symbol) lives where the graph runs.
    if (consumers[v].empty() && !g.nodes().empty()) dev[v] = g.nodes().front().device;
  }
  return dev;
}

std::map<std::string, int> place_nodes(Graph& g, const Backend& primary) {
  std::map<std::string, int> fallback;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.node(static_cast<int>(i));
    n.device = primary.name();
    if (primary.name() != "cpu" && !primary.supports(g, n)) n.device = "cpu";
  }
  // Every user of a state on one device: the CPU if any of them must be there.
  const auto consumers = g.consumers();
  for (int s : g.states()) {
    bool cpu = false;
    for (int c : consumers[s]) cpu = cpu || g.nodes()[c].device == "cpu";
    if (!cpu) continue;
    for (int c : consumers[s]) g.node(c).device = "cpu";
    // The in-place updates' outputs are the state too: their readers follow.
    for (int c : consumers[s])
      for (size_t o = 0; o < g.nodes()[c].outputs.size(); ++o)
        if (g.nodes()[c].def().aliases_input(static_cast<int>(o)) >= 0)
          for (int r : consumers[g.nodes()[c].outputs[o]]) g.node(r).device = "cpu";
  }
  // Views run where their input is (they move no data); in order, so chains of views follow.
  std::vector<std::string> dev = value_devices(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.node(static_cast<int>(i));
    if (is_view(g, n) && !dev[n.inputs[0]].empty()) n.device = dev[n.inputs[0]];
    for (int v : n.outputs) dev[v] = n.device;
  }
  for (const Node& n : g.nodes())
    if (n.device != primary.name() && !is_view(g, n)) ++fallback[n.op];
  return fallback;
}

void insert_copies(Graph& g) {
  const std::vector<std::string> dev = value_devices(g);
  std::map<std::pair<int, std::string>, int> copies;  // (value, device) -> copy's value
  const size_t n_nodes = g.nodes().size();
  for (size_t i = 0; i < n_nodes; ++i) {
    for (size_t slot = 0; slot < g.nodes()[i].inputs.size(); ++slot) {
      const int v = g.nodes()[i].inputs[slot];
      const std::string device = g.nodes()[i].device;
      if (v < 0 || dev[v].empty() || dev[v] == device) continue;
      KILN_CHECK(g.values()[v].kind != ValueKind::State, "[engine] state '{}' is used on two devices",
                 g.values()[v].name);
      auto it = copies.find({v, device});
      if (it == copies.end()) {
        const Value& src = g.values()[v];
        const int out = g.add_value({ValueKind::Activation, src.dtype, {}, {}});
        Node c;
        c.name = fmt::format("copy.{}.to_{}", v, device);
        c.op = "copy";
        c.inputs = {v};
        c.outputs = {out};
        c.attrs.set("device", device);
        c.device = device;
        g.append_node(std::move(c));
        it = copies.emplace(std::make_pair(v, device), out).first;
      }
      g.node(static_cast<int>(i)).inputs[slot] = it->second;
    }
  }
  g.toposort();
}

}  // namespace kiln
