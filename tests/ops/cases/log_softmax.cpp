// log_softmax: rows of f32 and f16 scores (one element, odd widths, a vocabulary-sized row),
// without bans and with banned indices in i32 and i64 (padding -1, a token banned twice); a long
// row whose first 5000 entries are -inf (on CUDA: a chunk of nothing but -inf).
#include <limits>

#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(log_softmax) {
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const Shape& s : {Shape{1, 1}, Shape{3, 17}, Shape{2, 3, 1001}, Shape{4, 32000}}) {
      OpCase plain("log_softmax", t, s);
      plain.output(plain.graph.add("log_softmax", "log_softmax", {plain.input("x", t, s, 3.0)}));
      cases.push_back(std::move(plain));
      if (s.back() < 17) continue;
      for (DType it : {DType::I32, DType::I64}) {
        OpCase c("log_softmax", t, s, std::string("banned/") + dtype_name(it));
        Shape bs = s;
        bs.back() = 4;
        std::vector<float> banned;
        for (int64_t r = 0; r < numel(bs) / 4; ++r)
          banned.insert(banned.end(),
                        {static_cast<float>(r % 5), -1, static_cast<float>(s.back() - 1), static_cast<float>(r % 5)});
        const int x = c.input("x", t, s, 3.0);
        c.output(c.graph.add("log_softmax", "log_softmax", {x, c.input_values("banned", it, bs, banned)}));
        cases.push_back(std::move(c));
      }
    }
  for (DType t : {DType::F32, DType::F16}) {
    const Shape s{2, 9000};
    OpCase c("log_softmax", t, s, "masked_chunk");
    std::vector<float> v(static_cast<size_t>(numel(s)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = i < 5000 ? -std::numeric_limits<float>::infinity() : static_cast<float>(i % 37) * 0.125f;
    c.output(c.graph.add("log_softmax", "log_softmax", {c.input_values("x", t, s, v)}));
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace kiln::test
