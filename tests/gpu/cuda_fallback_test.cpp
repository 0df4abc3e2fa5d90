// A graph with an op the CUDA backend has no kernel for runs that node alone on the CPU, with a
// copy on each side, and the rest on the GPU. The op is defined here, for this test only.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_kernel.h"
#include "graph/op.h"
#include "tests/test_graphs.h"

namespace kiln {
namespace {

class NegateOp : public OpDef {
 public:
  std::string name() const override { return "test_negate"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node&, const std::vector<std::optional<Shape>>& in) const override {
    return {*in[0]};
  }
};

class NegateKernel : public CpuKernel {
 public:
  NegateKernel(const Graph&, int, const ConstantLookup&) {}
  void run(const KernelArgs& a, int) override {
    const float* x = a.inputs[0].as<const float>();
    float* y = a.outputs[0].as<float>();
    for (int64_t i = 0; i < a.outputs[0].numel(); ++i) y[i] = -x[i];
  }
};

void register_negate() {
  static const bool once = [] {
    OpRegistry::instance().add(std::make_unique<NegateOp>());
    CpuKernelRegistry::instance().add("test_negate", make_cpu_kernel<NegateKernel>);
    return true;
  }();
  (void)once;
}

TEST(CudaFallback, AnOpWithoutACudaKernelRunsAloneOnTheCpu) {
  REQUIRE_GPU();
  register_negate();
  test::GraphMaker g(3);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 2, false, Activation::SiLU);
  x = g.op("test_negate", {x});
  x = g.conv(x, 24, 1, 1, false, Activation::SiLU);
  x = g.linear(g.flatten(g.pool(x)), 10, Activation::None);
  g.finish(x);
  auto gpu = test::engine(g.def, "cuda");
  EXPECT_EQ(gpu->cpu_fallback_nodes(), 1);
  int copies = 0;
  for (const Node& n : gpu->executed().nodes()) {
    copies += n.op == "copy";
    if (n.op == "test_negate") {
      EXPECT_EQ(n.device, "cpu");
    } else if (n.op != "copy") {
      EXPECT_EQ(n.device, "cuda") << n.name;
    }
  }
  EXPECT_EQ(copies, 2);
  const Tensor input = test::random_input(g.def, 2, 40, 36, 1);
  const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input), b = test::logits(*gpu, input);
  EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3);
}

}  // namespace
}  // namespace kiln
