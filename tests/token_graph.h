// A small graph of no known task, for tests of "any bundle" paths (kiln run, kiln serve's tensor
// servable): "ids" [batch, seq] (int64) -> embedding -> linear: "logits" [batch, seq, 5] and their
// argmax "tokens" [batch, seq].
#pragma once

#include "graph/builder.h"

namespace kiln::test {

inline ModelDefinition token_model() {
  ModelDefinition def;
  def.family = "test";
  def.architecture = "tokens";
  def.task = "test";
  {
    GraphBuilder b(def);
    Tensor table({7, 4}), head({5, 4});
    for (size_t i = 0; i < table.data.size(); ++i) table.data[i] = 0.1f * static_cast<float>((i * 5) % 11) - 0.5f;
    for (size_t i = 0; i < head.data.size(); ++i) head.data[i] = 0.3f * static_cast<float>((i * 3) % 7) - 0.9f;
    const int ids = b.input("ids", DType::I64, {{0, "batch"}, {0, "seq"}});
    const int x = b.op("gather", "embed", {b.weight("embed.weight", table), ids});
    const int logits = b.linear(x, "head", head, Tensor{});
    b.output("logits", logits);
    b.output("tokens", b.op("argmax", "pick", {logits}, {{"axis", int64_t{-1}}}));
  }
  def.task_config = {{"graph", "main"}};
  return def;
}

}  // namespace kiln::test
