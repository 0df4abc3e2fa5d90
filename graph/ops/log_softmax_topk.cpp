// log_softmax_topk: log_softmax(x, banned) then topk (the k largest, last axis) as one node, the
// form a backend's rewrite (fuse_log_softmax_topk) gives a generator's last two steps so that the
// [rows, vocabulary] log-probabilities are never written out. Outputs: the k best log-
// probabilities (f32, best first) and their indices (i64), both x's shape with k along the last
// axis. Ties go to the lower index, NaN ranks above every number, banned entries are -inf (and
// picked only when fewer than k entries are above -inf). A kernel may rank by x itself, which
// orders as the log-probabilities do except where two of those round to one f32 value, and in a
// row holding NaN or +inf (whose log-probabilities are all NaN): there the order and the values
// are the kernel's (the CUDA kernel of long rows ranks such a row by x).
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class LogSoftmaxTopkOp : public OpDef {
 public:
  std::string name() const override { return "log_softmax_topk"; }
  std::vector<OpInput> inputs() const override { return {{"x"}, {"banned", true}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("k", AttrType::Int)}; }
  int num_outputs(const Node&) const override { return 2; }
  void check_attrs(const Node& n) const override {
    KILN_CHECK(n.attrs.get_int("k") >= 1, "[log_softmax_topk] {}: k must be at least 1", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    KILN_CHECK(*in[0] != DType::F8E4M3, "[log_softmax_topk] {}: no FP8 input", n.name);
    if (in.size() > 1 && in[1]) require_integer(in[1], n, "banned");
    return {DType::F32, DType::I64};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    const int64_t k = n.attrs.get_int("k");
    KILN_CHECK(!x.empty() && x.back() >= k, "[log_softmax_topk] {}: k = {} is more than x {} has along its last axis",
               n.name, k, to_string(x));
    if (in.size() > 1 && in[1]) {
      const Shape& b = *in[1];
      KILN_CHECK(b.size() == x.size() && std::equal(x.begin(), x.end() - 1, b.begin()),
                 "[log_softmax_topk] {}: banned {} must be x's leading dims {} and a count", n.name, to_string(b),
                 to_string(x));
    }
    Shape y = x;
    y.back() = k;
    return {y, y};
  }
};

}  // namespace

KILN_REGISTER_OPS(log_softmax_topk) { registry.add(std::make_unique<LogSoftmaxTopkOp>()); }

}  // namespace kiln
