// The CUDA backend against the CPU reference: small graphs that exercise every kernel, fused
// and unfused, at awkward sizes; then the real EfficientNet-B0 on timm's reference inputs.
// Skips (with a message) where there is no usable GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/cuda/cudnn_conv.h"
#include "backends/engine.h"
#include "checkpoints/safetensors.h"
#include "graph/family_registry.h"
#include "tests/test_graphs.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

using test::compare;
using test::GraphMaker;
using test::image_sizes;
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

TEST(CudaEngine, TheMBConvPathIsFused) {
  REQUIRE_GPU();
  // What the rewrites must make of an MBConv network: no separate gate multiply, residual add,
  // SE pool or input transpose; two dense layers as one mlp; the classifier writing f32 itself.
  auto gpu = test::engine(mbconv_graph(16, 3, 1, false), "cuda");
  std::map<std::string, int> ops;
  for (const Node& n : gpu->executed().nodes()) ops[n.op]++;
  EXPECT_EQ(ops["mul"], 0);
  EXPECT_EQ(ops["add"], 0);
  EXPECT_EQ(ops["transpose"], 0);
  EXPECT_EQ(ops["cast"], 0);
  EXPECT_EQ(ops["mlp"], 2);
  EXPECT_EQ(ops["linear"], 1);
  EXPECT_EQ(ops["reduce"], 1);  // the head's pool, after a GEMM
  for (const Node& n : gpu->executed().nodes()) EXPECT_EQ(n.device, "cuda") << n.name;
}

TEST(CudaEngine, UnfusedKernelsMatchCpu) {
  REQUIRE_GPU();
  // The SE gate feeds two consumers and the residual add is not after a GEMM, so mul, add,
  // pool and linear run as kernels of their own; 10 classes take the small linear kernel.
  GraphMaker g(11);
  int x = g.input(3);
  x = g.conv(x, 24, 3, 2, false, Activation::SiLU);
  int d = g.conv(x, 24, 3, 1, true, Activation::None);
  int p = g.pool(d);
  int gate = g.linear(p, 24, Activation::Sigmoid);
  int s = g.op("mul", {d, gate});
  int a = g.op("add", {s, x});
  int b = g.op("add", {s, a});
  int pooled = g.flatten(g.pool(b));
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
  x = g.flatten(g.pool(x));
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
  y = g.op("add", {y, x});
  y = g.conv(y, 120, 1, 1, false, Activation::SiLU);  // short K, no gate: the streaming variants
  y = g.flatten(g.pool(y));
  y = g.linear(y, 24, Activation::None);
  g.finish(y);
  const Bindings sizes = image_sizes(2, 38, 34);
  const test::ForcedVariants forced(g.def, sizes);
  ASSERT_GE(forced.choices(), 3u);
  const Tensor input = test::random_input(g.def, 2, 38, 34, 3);
  const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input);
  for (const std::string& variant : test::kGemmVariantNames) {
    if (variant == "gemv") continue;  // hundreds of rows here: SmallLinearChains covers it
    auto gpu = forced.forced(variant);
    const std::vector<float> b = test::logits(*gpu, input);
    EXPECT_GE(test::ForcedVariants::taken(*gpu, sizes, variant), 1) << "the forced plan was not used";
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant;
  }
}

// The streaming GEMMs' blocks stay resident and walk the rows (gemm_stream.cu): a map large enough
// that every warp takes several tiles with the next one's copy in flight (batch 3 of 225 x 239:
// 161325 rows, not a multiple of 16), K of 16, 120, 24 and 40 (one, eight, two and three steps
// of 16, the last padded), N with a partial last chunk of columns (120 and 40). The output is
// the last map itself, compared element by element: a tile done wrong would vanish in a pooled
// output. (The last conv writes the graph's f32 output, which these kernels do not take.)
TEST(CudaEngine, StreamingGemmsWalkManyTiles) {
  REQUIRE_GPU();
  GraphMaker g(41);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 1, false, Activation::SiLU);
  x = g.conv(x, 120, 1, 1, false, Activation::SiLU);
  x = g.conv(x, 24, 1, 1, false, Activation::None);
  x = g.conv(x, 40, 1, 1, false, Activation::ReLU);
  x = g.conv(x, 16, 1, 1, false, Activation::None);
  g.finish(x);
  const Bindings sizes = image_sizes(3, 225, 239);
  const test::ForcedVariants forced(g.def, sizes);
  const Tensor input = test::random_input(g.def, 3, 225, 239, 43);
  const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input);
  const float peak =
      std::abs(*std::max_element(a.begin(), a.end(), [](float u, float v) { return std::abs(u) < std::abs(v); }));
  for (const std::string variant : {"stream_n32", "stream_n64"}) {
    auto gpu = forced.forced(variant);
    const std::vector<float> b = test::logits(*gpu, input);
    EXPECT_EQ(test::ForcedVariants::taken(*gpu, sizes, variant), variant == "stream_n32" ? 3 : 2)
        << "the forced plan was not used: " << variant;
    EXPECT_LT(test::max_abs_diff(a.data(), b.data(), a.size()), 1e-2 * peak) << variant;
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant;
  }
}

// Dense k x k convs run as implicit GEMMs on the mma.sync tiles: each tile forced on every layer
// (stride 1 and 2, 3x3 and 5x5, K not a multiple of a stage, rows not a multiple of a tile).
TEST(CudaEngine, ImplicitGemmConvsMatchCpuWithEveryTile) {
  REQUIRE_GPU();
  GraphMaker g(13);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 2, false, Activation::SiLU);  // the stem
  x = g.conv(x, 24, 3, 1, false, Activation::SiLU);
  x = g.conv(x, 40, 3, 2, false, Activation::SiLU);
  x = g.conv(x, 32, 5, 1, false, Activation::None, true);
  x = g.flatten(g.pool(x));
  x = g.linear(x, 16, Activation::None);
  g.finish(x);
  const Bindings sizes = image_sizes(2, 37, 45);
  const test::ForcedVariants forced(g.def, sizes);
  const Tensor input = test::random_input(g.def, 2, 37, 45, 11);
  const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input);
  auto tuned = test::engine(g.def, "cuda");
  tuned->prepare(sizes);
  int implicit = 0;
  for (const std::string& line : tuned->plan_summary(sizes))
    implicit += line.find("implicit gemm") != std::string::npos;
  EXPECT_EQ(implicit, 3) << "the three dense convs after the stem";
  for (const std::string& variant : test::kGemmVariantNames) {
    if (variant.rfind("mma_", 0) != 0) continue;  // the only tiles an implicit GEMM runs on
    auto gpu = forced.forced(variant);
    const std::vector<float> b = test::logits(*gpu, input);
    EXPECT_GE(test::ForcedVariants::taken(*gpu, sizes, variant), 1) << "the forced plan was not used";
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant;
  }
}

// cuDNN's plans stand in for the dense convs' implicit GEMMs where it is present: each plan rank
// forced on every conv that has it (3x3 and 5x5, strides 1 and 2, "same" padding, SiLU, ReLU and
// none; the 1x1 convs between them, one with a fused residual, keep kiln's GEMM), against the CPU.
TEST(CudaEngine, CudnnConvPlansMatchCpu) {
  REQUIRE_GPU();
  if (!cuda::cudnn_conv::available()) GTEST_SKIP() << "cuDNN 9 (libcudnn.so.9) is not on the library path";
  GraphMaker g(23);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 2, false, Activation::SiLU);  // the stem
  x = g.conv(x, 32, 3, 1, false, Activation::SiLU);
  x = g.conv(x, 48, 3, 2, false, Activation::SiLU);
  int y = g.conv(x, 48, 5, 1, false, Activation::None, true);
  y = g.conv(y, 96, 1, 1, false, Activation::SiLU);
  y = g.conv(y, 48, 1, 1, false, Activation::None);
  x = g.op("add", {y, x});
  x = g.conv(x, 40, 3, 1, false, Activation::ReLU);
  x = g.flatten(g.pool(x));
  x = g.linear(x, 16, Activation::None);
  g.finish(x);
  for (auto [batch, h, w] : {std::tuple{1, 37, 45}, std::tuple{3, 64, 48}}) {
    const Bindings sizes = image_sizes(batch, h, w);
    const test::ForcedVariants forced(g.def, sizes);
    const Tensor input = test::random_input(g.def, batch, h, w, 29);
    const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input);
    for (int plan = 0; plan < cuda::cudnn_conv::kMaxPlans; ++plan) {
      const std::string variant = "cudnn_" + std::to_string(plan);
      auto gpu = forced.forced(variant);
      const std::vector<float> b = test::logits(*gpu, input);
      const int taken = test::ForcedVariants::taken(*gpu, sizes, variant);
      if (plan == 0) {
        EXPECT_EQ(taken, 4) << "every dense conv after the stem has a first cuDNN plan";
      }
      EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant << " batch " << batch;
    }
  }
}

// Each depthwise variant forced on every depthwise layer that can take it: every kernel size and
// stride the kernels take, channel counts that give the kernels 1 to 8 groups of 8 channels per
// block and up to 9 channel slices per tile (144 channels: 18 groups), with and without the
// squeeze-excite mean, maps that are not a multiple of any tile, batch 1 and 3.
TEST(CudaEngine, EveryDepthwiseVariantMatchesCpu) {
  REQUIRE_GPU();
  for (auto [k, stride] : {std::pair{3, 1}, std::pair{3, 2}, std::pair{5, 1}, std::pair{5, 2}, std::pair{7, 1}})
    for (int c : {8, 48, 64, 144}) {
      GraphMaker g(31 + k + c);
      int x = g.input(3);
      x = g.conv(x, c, 3, 1, false, Activation::SiLU);
      x = g.conv(x, c, k, stride, true, Activation::SiLU);  // + the SE mean
      x = g.squeeze_excite(x, 8);
      x = g.conv(x, 64, 1, 1, false, Activation::None);
      x = g.conv(x, 64, 3, 1, true, Activation::ReLU);  // no mean (a 1x1 conv reads it); takes every variant
      x = g.conv(x, 24, 1, 1, false, Activation::SiLU);
      x = g.flatten(g.pool(x));
      x = g.linear(x, 10, Activation::None);
      g.finish(x);
      for (auto [batch, h, w] : {std::tuple{1, 37, 45}, std::tuple{3, 70, 33}}) {
        const Bindings sizes = image_sizes(batch, h, w);
        const test::ForcedVariants forced(g.def, sizes);
        const Tensor input = test::random_input(g.def, batch, h, w, 17);
        const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input);
        for (const std::string& variant : test::kDepthwiseVariantNames) {
          auto gpu = forced.forced(variant);
          const std::vector<float> b = test::logits(*gpu, input);
          EXPECT_GE(test::ForcedVariants::taken(*gpu, sizes, variant), 1)
              << "the forced plan was not used: " << variant;
          EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3)
              << variant << " k" << k << " s" << stride << " c" << c << " batch " << batch << " " << h << "x" << w;
        }
      }
    }
}

// Squeeze-excite's two small layers (one mlp node) with each variant forced (rows per block; split):
// channels and hidden units that are not multiples of the kernel's 4-float loads, a batch that
// is not a multiple of the rows per block, two squeeze-excites in a row.
TEST(CudaEngine, EveryMlpVariantMatchesCpu) {
  REQUIRE_GPU();
  GraphMaker g(41);
  int x = g.input(3);
  x = g.conv(x, 18, 3, 2, false, Activation::SiLU);
  x = g.squeeze_excite(x, 5);
  x = g.conv(x, 48, 1, 1, false, Activation::SiLU);
  x = g.conv(x, 48, 3, 1, true, Activation::SiLU);
  x = g.squeeze_excite(x, 12);
  x = g.conv(x, 16, 1, 1, false, Activation::None);
  x = g.flatten(g.pool(x));
  x = g.linear(x, 10, Activation::None);
  g.finish(x);
  for (int batch : {1, 9}) {
    const Bindings sizes = image_sizes(batch, 35, 33);
    const test::ForcedVariants forced(g.def, sizes);
    const Tensor input = test::random_input(g.def, batch, 35, 33, 23);
    const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input);
    for (const std::string variant : {"mlp_rows1", "mlp_rows2", "mlp_rows4", "mlp_rows8", "mlp_split"}) {
      auto gpu = forced.forced(variant);
      const std::vector<float> b = test::logits(*gpu, input);
      const bool runs = batch > 1 || variant == "mlp_rows1" || variant == "mlp_split";
      EXPECT_EQ(test::ForcedVariants::taken(*gpu, sizes, variant), runs ? 2 : 0) << variant << " batch " << batch;
      EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant << " batch " << batch;
    }
  }
}

// Two dense layers on pooled vectors as GEMMs of two rows (no squeeze-excite shape to fuse them
// into an mlp: the second has 16 outputs for 16 channels, but nothing gates a map with it).
TEST(CudaEngine, SmallLinearChainsMatchCpuWithEveryVariant) {
  REQUIRE_GPU();
  GraphMaker g(21);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 1, false, Activation::SiLU);
  x = g.flatten(g.pool(x));
  x = g.linear(x, 8, Activation::SiLU);
  x = g.linear(x, 16, Activation::Sigmoid);
  g.finish(x);
  const Bindings sizes = image_sizes(2, 33, 32);
  const test::ForcedVariants forced(g.def, sizes);
  const Tensor input = test::random_input(g.def, 2, 33, 32, 5);
  const std::vector<float> a = test::logits(*test::engine(g.def, "cpu"), input);
  for (const std::string& variant : test::kGemmVariantNames) {
    const std::vector<float> b = test::logits(*forced.forced(variant), input);
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 5e-3) << variant;
  }
}

ModelDefinition b0() {
  Checkpoint ckpt(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"));
  return FamilyRegistry::instance().find_family("efficientnet_b0")->build(ckpt);
}

TEST(CudaEngine, B0CheckpointMatchesCpuOnReferenceInputs) {
  REQUIRE_GPU();
  ModelDefinition def = b0();
  SafetensorsFile ref(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  auto cpu = test::engine(def, "cpu"), gpu = test::engine(def, "cuda");
  EXPECT_EQ(gpu->cpu_fallback_nodes(), 0);
  for (const char* name : {"inputs", "stress_inputs"}) {
    Tensor in = ref.to_float(name);
    const int batch = static_cast<int>(in.dim(0));
    const std::vector<float> a = test::logits(*cpu, in), b = test::logits(*gpu, in);
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
  auto gpu = test::engine(def, "cuda");
  const std::vector<float> all = test::logits(*gpu, in);
  for (int n = 0; n < 8; ++n) {
    Tensor one({1, 3, 224, 224});
    std::copy(in.data.begin() + n * one.numel(), in.data.begin() + (n + 1) * one.numel(), one.data.begin());
    const std::vector<float> y = test::logits(*gpu, one);
    EXPECT_LT(test::max_abs_diff(y.data(), all.data() + n * 1000, 1000), 2e-2) << n;
  }
}

}  // namespace
}  // namespace kiln
