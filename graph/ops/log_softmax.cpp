// log_softmax: y = x - log(sum(exp(x))) along the last axis, always computed and returned in f32
// (whatever x's float type: a GPU computing in fp16 still ranks tokens by fp32 log-probabilities),
// then, with the optional input banned [..., B] (integers, x's leading dims), y[..., banned[...,
// j]] = -inf for every banned entry >= 0 (negative entries are padding; one at or past the axis's
// size is an error, as kernels check). A generator's token scores: log-probabilities with the
// tokens its rules forbid (bad words, repeated n-grams, EOS before the minimum length) removed.
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class LogSoftmaxOp : public OpDef {
 public:
  std::string name() const override { return "log_softmax"; }
  std::vector<OpInput> inputs() const override { return {{"x"}, {"banned", true}}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    KILN_CHECK(*in[0] != DType::F8E4M3, "[log_softmax] {}: no FP8 input", n.name);
    if (in.size() > 1 && in[1]) require_integer(in[1], n, "banned");
    return {DType::F32};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    KILN_CHECK(!x.empty() && x.back() > 0, "[log_softmax] {}: x {} has no elements along its last axis", n.name,
               to_string(x));
    if (in.size() > 1 && in[1]) {
      const Shape& b = *in[1];
      KILN_CHECK(b.size() == x.size() && std::equal(x.begin(), x.end() - 1, b.begin()),
                 "[log_softmax] {}: banned {} must be x's leading dims {} and a count", n.name, to_string(b),
                 to_string(x));
    }
    return {x};
  }
};

}  // namespace

KILN_REGISTER_OPS(log_softmax) { registry.add(std::make_unique<LogSoftmaxOp>()); }

}  // namespace kiln
