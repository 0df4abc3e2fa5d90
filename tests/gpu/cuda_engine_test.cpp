// The CUDA backend against the CPU reference: small graphs that exercise every kernel, fused
// and unfused, at awkward sizes; then the real EfficientNet-B0 on timm's reference inputs.
// Skips (with a message) where there is no usable GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cpu/cpu_engine.h"
#include "backends/engine.h"
#include "checkpoints/safetensors.h"
#include "graph/family_registry.h"
#include "tests/gpu/test_graphs.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

using test::compare;
using test::GraphMaker;
using test::mbconv_graph;

TEST(CudaEngine, FusedMBConvPathMatchesCpu) {
  REQUIRE_GPU();
  for (int k : {3, 5})
    for (int stride : {1, 2})
      for (bool same : {false, true})
        for (auto [batch, h, w] : {std::tuple{1, 32, 32}, std::tuple{3, 29, 37}, std::tuple{5, 64, 48}}) {
          double err = compare(mbconv_graph(16, k, stride, same), batch, h, w);
          EXPECT_LT(err, 5e-3) << "k" << k << " s" << stride << " same=" << same << " batch " << batch << " " << h
                               << "x" << w;
        }
}

TEST(CudaEngine, UnfusedKernelsMatchCpu) {
  REQUIRE_GPU();
  // The SE gate feeds two consumers and the residual add is not after a GEMM, so scale, add,
  // pool and linear run as kernels of their own; 10 classes take the naive linear kernel.
  GraphMaker g(11);
  int x = g.input(3);
  x = g.conv(x, 24, 3, 2, false, Activation::SiLU);
  int d = g.conv(x, 24, 3, 1, true, Activation::None);
  int p = g.simple(Op::GlobalAvgPool, {d});
  int gate = g.linear(p, 24, Activation::Sigmoid);
  int s = g.simple(Op::ScaleChannels, {d, gate});
  int a = g.simple(Op::Add, {s, x});
  int b = g.simple(Op::Add, {s, a});
  int pooled = g.simple(Op::GlobalAvgPool, {b});
  int out = g.linear(pooled, 10, Activation::None);
  g.finish(out);
  for (int batch : {1, 4}) EXPECT_LT(compare(g.def, batch, 20, 18), 5e-3) << "batch " << batch;
}

TEST(CudaEngine, LargeGemmsMatchCpu) {
  REQUIRE_GPU();
  // K and N past one tile, M not a multiple of any tile: every variant the tuner may pick.
  GraphMaker g(5);
  int x = g.input(3);
  x = g.conv(x, 40, 3, 1, false, Activation::SiLU);
  x = g.conv(x, 328, 1, 1, false, Activation::SiLU);
  x = g.conv(x, 96, 1, 1, false, Activation::None);
  x = g.simple(Op::GlobalAvgPool, {x});
  x = g.linear(x, 1000, Activation::None);
  g.finish(x);
  EXPECT_LT(compare(g.def, 2, 45, 41), 5e-3);
}

TEST(CudaEngine, EveryGemmVariantMatchesCpu) {
  REQUIRE_GPU();
  // Force one tile variant on every GEMM through a saved plan, and check the plan was taken.
  GraphMaker g(9);
  int x = g.input(3);
  x = g.conv(x, 48, 3, 2, false, Activation::SiLU);
  int d = g.conv(x, 48, 5, 1, true, Activation::SiLU);
  d = g.squeeze_excite(d, 12);
  int y = g.conv(d, 336, 1, 1, false, Activation::None);  // long K next, for the split-K variants
  y = g.conv(y, 48, 1, 1, false, Activation::None);
  y = g.simple(Op::Add, {y, x});
  y = g.simple(Op::GlobalAvgPool, {y});
  y = g.linear(y, 24, Activation::None);
  g.finish(y);
  const test::ForcedVariants forced(g.def, 2, 19, 17);
  ASSERT_GE(forced.gemms(), 3u);
  const std::vector<float> input = test::random_input(g.def, 2, 19, 17, 3);
  std::vector<float> a(2 * 24);
  make_engine("cpu", g.def.graph, g.def.weight_lookup())->run(input.data(), 2, 19, 17, a.data());
  for (const std::string& variant : test::kGemmVariantNames) {
    auto gpu = forced.engine(variant);
    std::vector<float> b(2 * 24, std::nanf(""));
    gpu->run(input.data(), 2, 19, 17, b.data());
    EXPECT_EQ(gpu->export_plan()["batches"]["2"]["gemm"][0], variant) << "the forced plan was not used";
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant;
  }
}

// A squeeze-excite MLP on its own (pool, then linears of 8 and 16 outputs as GEMMs of two rows),
// with every GEMM variant forced.
TEST(CudaEngine, SmallLinearChainsMatchCpuWithEveryVariant) {
  REQUIRE_GPU();
  GraphMaker g(21);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 1, false, Activation::SiLU);
  x = g.simple(Op::GlobalAvgPool, {x});
  x = g.linear(x, 8, Activation::SiLU);
  x = g.linear(x, 16, Activation::Sigmoid);
  g.finish(x);
  const test::ForcedVariants forced(g.def, 2, 6, 5);
  const std::vector<float> input = test::random_input(g.def, 2, 6, 5, 5);
  std::vector<float> a(2 * 16);
  make_engine("cpu", g.def.graph, g.def.weight_lookup())->run(input.data(), 2, 6, 5, a.data());
  for (const std::string& variant : test::kGemmVariantNames) {
    auto gpu = forced.engine(variant);
    std::vector<float> b(a.size(), std::nanf(""));
    gpu->run(input.data(), 2, 6, 5, b.data());
    std::string values;
    for (size_t e = 0; e < b.size(); e += 4) values += fmt::format(" {:.3g}/{:.3g}", a[e], b[e]);
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant << " CPU/CUDA:" << values;
  }
}

ModelDefinition b0() {
  Checkpoint ckpt(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"));
  return FamilyRegistry::instance().find_family("efficientnet_b0")->build(ckpt);
}

TEST(CudaEngine, EfficientNetB0MatchesCpuOnReferenceInputs) {
  REQUIRE_GPU();
  ModelDefinition def = b0();
  SafetensorsFile ref(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  auto cpu = make_engine("cpu", def.graph, def.weight_lookup());
  auto gpu = make_engine("cuda", def.graph, def.weight_lookup());
  for (const char* name : {"inputs", "stress_inputs"}) {
    Tensor in = ref.to_float(name);
    int batch = static_cast<int>(in.dim(0));
    std::vector<float> a(batch * 1000), b(batch * 1000);
    cpu->run(in.data.data(), batch, 224, 224, a.data());
    gpu->run(in.data.data(), batch, 224, 224, b.data());
    double max_abs = test::max_abs_diff(a.data(), b.data(), a.size());
    std::printf("[cuda] %s: fp16 vs fp32 max |logit diff| %.4f, rel L2 %.2e\n", name, max_abs,
                test::rel_l2(b.data(), a.data(), a.size()));
    for (float v : b) ASSERT_TRUE(std::isfinite(v)) << name;
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 1e-2) << name;
    if (std::string(name) == "inputs") {
      for (int n = 0; n < batch; ++n)
        EXPECT_EQ(test::top_indices(a.data() + n * 1000, 1000, 1), test::top_indices(b.data() + n * 1000, 1000, 1))
            << n;
    }
  }
}

TEST(CudaEngine, BatchesAgreeWithSingleImages) {
  REQUIRE_GPU();
  ModelDefinition def = b0();
  SafetensorsFile ref(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  Tensor in = ref.to_float("inputs");
  auto gpu = make_engine("cuda", def.graph, def.weight_lookup());
  std::vector<float> all(8 * 1000), one(1000);
  gpu->run(in.data.data(), 8, 224, 224, all.data());
  for (int n = 0; n < 8; ++n) {
    gpu->run(in.data.data() + n * 3 * 224 * 224, 1, 224, 224, one.data());
    EXPECT_LT(test::max_abs_diff(one.data(), all.data() + n * 1000, 1000), 2e-2) << n;
  }
}

}  // namespace
}  // namespace kiln
