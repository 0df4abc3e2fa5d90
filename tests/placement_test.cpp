// Per-node placement: a node the chosen backend has no kernel for runs on the CPU, alone, with a
// copy on each side; everything else stays where it was put. A stand-in backend that keeps its
// tensors in host memory but refuses tanh plays the GPU here, so CI checks the mechanism; the
// GPU tests check it on CUDA with an op only the test defines.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/engine.h"
#include "graph/builder.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

class NoTanhBackend : public CpuBackend {
 public:
  std::string name() const override { return "notanh"; }
  std::string device() const override { return "notanh"; }
  bool supports(const Graph& g, const Node& n) const override { return n.op != "tanh" && CpuBackend::supports(g, n); }
};

ModelDefinition chain() {
  ModelDefinition def;
  GraphBuilder b(def);
  Tensor w1({6, 4}), w2({3, 6});
  for (size_t i = 0; i < w1.data.size(); ++i) w1.data[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (size_t i = 0; i < w2.data.size(); ++i) w2.data[i] = 0.2f * static_cast<float>(i % 5) - 0.4f;
  const int x = b.input("x", DType::F32, {{0, "batch"}, {4, ""}});
  const int h = b.linear(x, "fc1", w1, Tensor{});
  const int t = b.op("tanh", "act", {h});
  b.output("y", b.linear(t, "fc2", w2, Tensor{}));
  def.validate();
  return def;
}

TEST(Placement, OnlyTheUnsupportedNodeRunsOnTheCpu) {
  const ModelDefinition def = chain();
  EngineOptions o;
  o.backend = std::make_shared<NoTanhBackend>();
  Engine mixed(def.graph(), def.constants(), o);
  EXPECT_EQ(mixed.cpu_fallback_nodes(), 1);
  std::map<std::string, std::string> device;
  int copies = 0;
  for (const Node& n : mixed.executed().nodes()) {
    device[n.name] = n.device;
    copies += n.op == "copy";
  }
  EXPECT_EQ(device["fc1"], "notanh");
  EXPECT_EQ(device["act"], "cpu");
  EXPECT_EQ(device["fc2"], "notanh");
  EXPECT_EQ(copies, 2);  // into the CPU and back
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, 0.0f, -0.5f, 3.0f};
  const HostTensor in = HostTensor::from_f32("x", {2, 4}, x);
  Engine cpu(def.graph(), def.constants(), EngineOptions{"cpu"});
  const auto want = cpu.run({in})[0].to_f32(), got = mixed.run({in})[0].to_f32();
  EXPECT_EQ(want, got);
  // Without tanh everything stays on the chosen backend.
  EXPECT_EQ(Engine(def.graph(), def.constants(), EngineOptions{"cpu"}).cpu_fallback_nodes(), 0);
}

}  // namespace
}  // namespace kiln
