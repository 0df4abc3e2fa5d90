// Test graphs for the GPU tests (built node by node with random weights), their random inputs,
// the CPU-vs-CUDA comparison, engines with a GEMM tile variant forced, and the skip for machines
// without a usable GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "graph/model_definition.h"
#include "tests/test_support.h"

// Skips the test where no GPU can run it (CI); run the gpu-labelled tests on a GPU machine.
#define REQUIRE_GPU() \
  if (!::kiln::cuda_available()) GTEST_SKIP() << "no usable CUDA GPU here"

namespace kiln::test {

// Every GEMM tile variant's name, for tests that force each one through a saved plan.
inline const std::vector<std::string> kGemmVariantNames = {
    "wmma_64x64",    "wmma_128x64", "wmma_64x32", "wmma_32x64", "wmma_128x64_w8", "wmma_64x128_w8", "wmma_32x64_k4",
    "wmma_32x64_k8", "mma_128x64",  "mma_64x64",  "mma_64x128", "mma_32x64",      "mma_128x32"};

// Builds graphs node by node with random weights.
class GraphMaker {
 public:
  explicit GraphMaker(uint32_t seed) : rng_(seed) {}
  ModelDefinition def;

  int input(int c) {
    int v = def.graph.add_value(c, "input");
    def.graph.set_input(v);
    return v;
  }
  int conv(int x, int out, int k, int stride, bool depthwise, Activation act, bool same = false) {
    int in = def.graph.values()[x].channels;
    Node n = base(Op::Conv2d, {x}, out);
    n.kernel = k;
    n.stride = stride;
    n.groups = depthwise ? in : 1;
    n.act = act;
    if (same)
      n.pad.same = true;
    else
      n.pad = {false, (k - 1) / 2, (k - 1) / 2, (k - 1) / 2, (k - 1) / 2};
    weight(n, {out, k, k, depthwise ? 1 : in}, 1.0f / std::sqrt(static_cast<float>(k * k * (depthwise ? 1 : in))));
    return add(n);
  }
  int linear(int x, int out, Activation act) {
    Node n = base(Op::Linear, {x}, out);
    n.act = act;
    weight(n, {out, def.graph.values()[x].channels},
           1.0f / std::sqrt(static_cast<float>(def.graph.values()[x].channels)));
    return add(n);
  }
  int simple(Op op, std::vector<int> inputs) {
    const int channels = def.graph.values()[inputs[0]].channels;  // before inputs is moved from
    return add(base(op, std::move(inputs), channels));
  }
  int squeeze_excite(int x, int rd) {
    int c = def.graph.values()[x].channels;
    int p = simple(Op::GlobalAvgPool, {x});
    int r = linear(p, rd, Activation::SiLU);
    int g = linear(r, c, Activation::Sigmoid);
    return simple(Op::ScaleChannels, {x, g});
  }
  void finish(int out) {
    def.graph.set_output(out);
    def.validate();
  }

 private:
  Node base(Op op, std::vector<int> inputs, int out_channels) {
    Node n;
    n.name = "n" + std::to_string(def.graph.nodes().size());
    n.op = op;
    n.inputs = std::move(inputs);
    n.output = def.graph.add_value(out_channels);
    return n;
  }
  void weight(Node& n, std::vector<int64_t> shape, float scale) {
    std::normal_distribution<float> d(0.0f, scale);
    Tensor w(shape), b({shape[0]});
    for (auto& v : w.data) v = d(rng_);
    for (auto& v : b.data) v = d(rng_) * 0.5f;
    n.weight = n.name + ".weight";
    n.bias = n.name + ".bias";
    def.weights[n.weight] = std::move(w);
    def.weights[n.bias] = std::move(b);
  }
  int add(Node n) {
    int out = n.output;
    def.graph.add_node(std::move(n));
    return out;
  }
  std::mt19937 rng_;
};

// Standard-normal input for `batch` images of h x w, the same for the same seed.
inline std::vector<float> random_input(const ModelDefinition& def, int batch, int h, int w, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> input(static_cast<size_t>(batch) * def.graph.values()[def.graph.input()].channels * h * w);
  for (auto& v : input) v = d(rng);
  return input;
}

// The input compare() uses for a batch size and height.
inline uint32_t compare_seed(int batch, int h) { return static_cast<uint32_t>(batch * 131 + h); }

// Runs both engines on the same random input; returns the relative L2 error of CUDA vs CPU.
inline double compare(const ModelDefinition& def, int batch, int h, int w, double* max_abs = nullptr) {
  auto cpu = make_engine("cpu", def.graph, def.weight_lookup());
  auto gpu = make_engine("cuda", def.graph, def.weight_lookup());
  const std::vector<float> input = random_input(def, batch, h, w, compare_seed(batch, h));
  const int out = cpu->output_elements(h, w);
  std::vector<float> a(static_cast<size_t>(batch) * out), b(a.size(), std::nanf(""));
  cpu->run(input.data(), batch, h, w, a.data());
  gpu->run(input.data(), batch, h, w, b.data());
  const auto nonfinite = std::count_if(b.begin(), b.end(), [](float v) { return !std::isfinite(v); });
  EXPECT_EQ(nonfinite, 0) << "unwritten or non-finite CUDA outputs; first: CPU " << a[0] << " CUDA " << b[0];
  if (max_abs) *max_abs = test::max_abs_diff(a.data(), b.data(), a.size());
  return test::rel_l2(b.data(), a.data(), a.size());
}

// CUDA engines with one GEMM tile variant forced on every GEMM: the saved plan of a probe engine
// prepared for batch x h x w, with its choices replaced.
class ForcedVariants {
 public:
  ForcedVariants(const ModelDefinition& def, int batch, int h, int w) : def_(def), batch_(std::to_string(batch)) {
    auto probe = make_engine("cuda", def.graph, def.weight_lookup());
    probe->prepare(batch, h, w);
    plan_ = probe->export_plan();
  }
  size_t gemms() const { return plan_.at("batches").at(batch_).at("gemm").size(); }
  std::unique_ptr<Engine> engine(const std::string& variant) const {
    nlohmann::json plan = plan_;
    plan["batches"][batch_]["gemm"] = std::vector<std::string>(gemms(), variant);
    return make_engine("cuda", def_.graph, def_.weight_lookup(), {{"cuda", plan}});
  }

 private:
  const ModelDefinition& def_;
  std::string batch_;
  nlohmann::json plan_;
};

// stem -> expand -> depthwise + SE -> project (+ residual) -> head conv -> pool -> classifier:
// the fused path, as in an MBConv network.
inline ModelDefinition mbconv_graph(int classes, int k, int stride, bool same) {
  GraphMaker g(7);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 2, false, Activation::SiLU, same);
  int skip = x;
  int y = g.conv(x, 48, 1, 1, false, Activation::SiLU);
  y = g.conv(y, 48, k, 1, true, Activation::SiLU, same);
  y = g.squeeze_excite(y, 12);
  y = g.conv(y, 16, 1, 1, false, Activation::None);
  x = g.simple(Op::Add, {y, skip});
  y = g.conv(x, 64, 1, 1, false, Activation::SiLU);
  y = g.conv(y, 64, k, stride, true, Activation::SiLU, same);
  y = g.squeeze_excite(y, 4);
  x = g.conv(y, 24, 1, 1, false, Activation::None);
  x = g.conv(x, 40, 1, 1, false, Activation::SiLU);
  x = g.simple(Op::GlobalAvgPool, {x});
  x = g.linear(x, classes, Activation::None);
  g.finish(x);
  return g.def;
}

}  // namespace kiln::test
