// A stand-in for the CUDA backend on the CPU: it applies the rewrites the GPU applies (and, for
// fp16, its precision lowering) and runs the result with the CPU's reference kernels, which run
// every fused form. A graph through it must compute what the original computes: CI thereby checks the
// rewrites on whole models without a GPU.
#pragma once

#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/engine.h"
#include "graph/model_definition.h"
#include "graph/rewrites/rewrite.h"

namespace kiln::test {

class FusingBackend : public CpuBackend {
 public:
  explicit FusingBackend(bool fp16) : CpuBackend(/*reference=*/true), fp16_(fp16) {}
  std::string name() const override { return "fusing"; }
  std::string device() const override { return "fusing"; }
  void convert(Graph& g) const override {
    if (fp16_) lower_precision(g, DType::F16);
  }
  void fuse(Graph& g) const override {
    const RewriteContext c{name(), [this](const Graph& graph, const Node& n) { return supports(graph, n); }};
    transpose_as_reshape(g, c);
    fold_input_layout(g, c);
    fuse_conv_mean(g, c);
    fuse_mlp(g, c);
    fuse_channel_gate(g, c);
    fuse_residual_add(g, c);
    fold_output_cast(g, c);
    fuse_fp8_output(g, c);
    fuse_norm_linear(g, c);
    fuse_log_softmax_topk(g, c);
    fuse_kv_cache_attention(g, c);
    fuse_qkv_attention(g, c);
    fuse_write_heads(g, c);
  }

 private:
  bool fp16_;
};

inline std::unique_ptr<Engine> fusing_engine(const ModelDefinition& def, bool fp16, const std::string& graph = "") {
  EngineOptions o;
  o.backend = std::make_shared<FusingBackend>(fp16);
  return std::make_unique<Engine>(graph.empty() ? def.graph() : def.graph(graph), def.constants(), o);
}

}  // namespace kiln::test
