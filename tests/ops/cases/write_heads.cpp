// write_heads against its decomposition (slice the columns, heads moved first, write_rows): a
// state filled whole, then some rows replaced by heads of a projection (others kept with a
// negative index), as an encoder puts a source's cross-attention keys and values into its slot
// of a cache [slots, H, capacity, D] from the stacked k/v projection (the values at a column
// past the keys, positions fewer than the capacity); one position; heads whose width or column
// is not a multiple of 8 elements (smaller copy units); a source row taken twice; every element
// type, i32 and i64 indices.
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct HeadsShape {
  Shape target;  // [R, H, S, D]
  int64_t count, positions, width, column;
  std::vector<float> index;
};

Graph decomposition(const HeadsShape& s, DType t, DType it) {
  Graph g;
  const int state = g.add_state("cache", t, fixed_shape(s.target));
  const int fill = g.add_input("fill", t, fixed_shape(s.target));
  const int source = g.add_input("source", t, fixed_shape({s.count, s.positions, s.width}));
  const int whole = g.add_input("whole", it, fixed_shape({s.target[0]}));
  const int index = g.add_input("index", it, fixed_shape({s.target[0]}));
  const int filled = g.add("write_rows", "fill", {state, fill, whole});
  const int64_t heads = s.target[1], d = s.target[3];
  const int part = g.add("slice", "part", {source},
                         {{"axes", std::vector<int64_t>{2}},
                          {"starts", std::vector<int64_t>{s.column}},
                          {"ends", std::vector<int64_t>{s.column + heads * d}}});
  const int r = g.add("reshape", "heads", {part}, {{"shape", std::vector<int64_t>{0, 0, heads, d}}});
  const int moved = g.add("transpose", "heads_first", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  g.add_output("y0", g.add("write_rows", "write", {filled, moved, index}));
  return g;
}

}  // namespace

KILN_OP_CASES(write_heads) {
  const std::vector<HeadsShape> shapes = {
      {{4, 2, 9, 8}, 2, 5, 32, 16, {1, -1, 0, -1}},  // the values of a stacked k/v projection
      {{3, 4, 6, 16}, 3, 6, 128, 0, {2, 0, 1}},      // every row, positions filling the capacity
      {{2, 3, 4, 5}, 2, 1, 17, 2, {-1, 1}},          // one position, odd widths and column
      {{5, 1, 7, 12}, 2, 3, 36, 12, {0, 0, -1, 1, 0}},
  };
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64})
    for (const HeadsShape& s : shapes) {
      const DType it = s.target[0] % 2 ? DType::I32 : DType::I64;
      OpCase c("write_heads", t, s.target, "column " + std::to_string(s.column) + "/" + dtype_name(it));
      const int state = c.graph.add_state("cache", t, fixed_shape(s.target));
      const int fill = c.input("fill", t, s.target, 1.0, -100, 100);
      const int source = c.input("source", t, {s.count, s.positions, s.width}, 1.0, -100, 100);
      std::vector<float> all(s.target[0]);
      for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<float>(r);
      const int whole = c.input_values("whole", it, {s.target[0]}, all);
      const int index = c.input_values("index", it, {s.target[0]}, s.index);
      const int filled = c.graph.add("write_rows", "fill", {state, fill, whole});
      c.output(c.graph.add("write_heads", "write", {filled, source, index}, {{"column", s.column}}));
      c.decomposition = [s, t, it] { return decomposition(s, t, it); };
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test
