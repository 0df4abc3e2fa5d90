// A transpose that moves only dims of size 1 (a decoder step's [rows, 1, heads, d] to [rows,
// heads, 1, d]) leaves every element where it was: it becomes a reshape, a view that costs no
// kernel. Dims that are not 1 at every size must keep their order.
#include "graph/rewrites/rewrite.h"

namespace kiln {

void transpose_as_reshape(Graph& g, const RewriteContext& c) {
  const ShapeOracle shapes(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.op != "transpose" || !c.mine(n) || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
    const int x = n.inputs[0];
    const int64_t rank = static_cast<int64_t>(shapes(x).size());
    const std::vector<int64_t>& perm = n.attrs.get_ints("perm");
    if (static_cast<int64_t>(perm.size()) != rank) continue;
    auto fixed = [&](int64_t axis, int64_t size) {
      return shapes.holds(x, [&](const Shape& s) { return s[axis] == size; });
    };
    // The reshape's target: fixed sizes as they are, a dim that varies copied (0) where it
    // keeps its place, else inferred (-1, at most once).
    std::vector<int64_t> target;
    int64_t last_moved = -1, inferred = 0;
    bool ok = true;
    for (int64_t j = 0; j < rank && ok; ++j) {
      const int64_t p = perm[j] < 0 ? perm[j] + rank : perm[j];
      if (p < 0 || p >= rank) {
        ok = false;
      } else if (!fixed(p, 1) && p < last_moved) {
        ok = false;  // a dim of more than one element changes place
      } else {
        if (!fixed(p, 1)) last_moved = p;
        const int64_t size = shapes(x)[p];
        if (fixed(p, size))
          target.push_back(size);
        else if (p == j)
          target.push_back(0);
        else if (++inferred == 1)
          target.push_back(-1);
        else
          ok = false;
      }
    }
    if (!ok) continue;
    Node r = n;
    r.op = "reshape";
    r.attrs = Attrs{{"shape", target}};
    if (!c.supports(g, r)) continue;
    g.node(static_cast<int>(i)) = std::move(r);
  }
}

}  // namespace kiln
