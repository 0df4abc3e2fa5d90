// A state's rows written with heads of a projection, as a graph builder writes it (the encoder of
// graph/encoder_decoder.cpp: each decoder layer's cross-attention keys and values): one part of a
// split of the projection, its heads moved first, write_rows into the state. It becomes one
// write_heads node reading the projection where the part lies; once every part is taken, the
// split and the head moves go too: on the GPU a layer's keys and values (a split they share,
// then a transpose and a write each) are two launches instead of five.
#include <numeric>

#include "graph/rewrites/head_moves.h"

namespace kiln {

void fuse_write_heads(Graph& g, const RewriteContext& c) {
  const HeadMoves heads(g, c);
  bool fused_any = false;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& write = g.nodes()[i];
    if (write.op != "write_rows" || !c.mine(write)) continue;
    const int target = write.inputs[0], update = write.inputs[1];
    const auto part = heads.split_part(update, static_cast<int>(i));
    if (!part) continue;
    // Every head of every target row: the update's heads and head width are the target's.
    const bool whole_heads = heads.shapes().holds({target, update}, [](const std::vector<Shape>& s) {
      return s[0].size() == 4 && s[1].size() == 4 && s[1][1] == s[0][1] && s[1][3] == s[0][3];
    });
    if (!whole_heads) continue;
    const Node& split = g.nodes()[part->split];
    const std::vector<int64_t> sizes = split.attrs.get_ints("sizes");
    if (sizes.size() != split.outputs.size()) continue;
    Node fused = write;
    fused.op = "write_heads";
    fused.inputs = {target, split.inputs[0], write.inputs[2]};
    fused.attrs = Attrs{};
    fused.attrs.set("column", std::accumulate(sizes.begin(), sizes.begin() + part->part, int64_t{0}));
    if (!c.supports(g, fused)) continue;
    g.node(static_cast<int>(i)) = std::move(fused);
    fused_any = true;
  }
  // The head moves, and the split once no part of it is read, are left without readers.
  if (fused_any) prune(g);
}

}  // namespace kiln
