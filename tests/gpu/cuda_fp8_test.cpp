// The CUDA backend's FP8 kernels against the CPU backend's FP8 emulation: the same graph with
// the same scales must give the same numbers up to fp16 rounding of the activations (which can
// move a value across an E4M3 rounding boundary), and FP8 must visibly differ from fp16.
#include <gtest/gtest.h>

#include <random>

#include "backends/engine.h"
#include "checkpoints/safetensors.h"
#include "graph/family_registry.h"
#include "quantize/calibrate.h"
#include "quantize/recipe.h"
#include "tests/test_graphs.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

// The pointwise convs in FP8, the depthwise convs with FP8 inputs (fp8-e4m3-expanded's layers).
const char* kExpandedRecipe = R"({"name": "t", "layers": [{"kind": "pointwise"},
                                   {"kind": "depthwise", "quantize": "input"}]})";

// Every selected layer clipped at `clip`: small enough that some activations saturate.
ModelDefinition quantized(ModelDefinition def, const char* recipe, float clip) {
  auto layers = select_fp8_layers(def, parse_recipe(nlohmann::json::parse(recipe), "t"));
  Fp8Clips clips;
  for (const auto& l : layers) clips[l.weight] = clip;
  apply_fp8(def, layers, clips);
  return def;
}

// One pointwise conv, fp16 and FP8, between fp16 layers, in each of its fused forms (a gate from
// an unfused squeeze-excite, whose small linears are GEMMs too; a residual), with every GEMM
// variant forced on every GEMM. K = 16 is half a K stage: the tiles' zero padding is exercised.
TEST(CudaFp8, SinglePointwiseConvMatchesCpuEmulation) {
  REQUIRE_GPU();
  for (bool gated : {false, true})
    for (bool residual : {false, true}) {
      test::GraphMaker g(21);
      int x = g.input(3);
      x = g.conv(x, 16, 3, 1, false, Activation::SiLU);
      int y = gated ? g.squeeze_excite(x, 8) : x;
      y = g.conv(y, 16, 1, 1, false, Activation::None);
      if (residual) y = g.op("add", {y, x});
      y = g.flatten(g.pool(y));
      y = g.linear(y, 8, Activation::None);
      g.finish(y);
      for (bool fp8 : {false, true}) {
        ModelDefinition def =
            fp8 ? quantized(g.def, R"({"name": "t", "layers": [{"kind": "pointwise"}]})", 2.0f) : g.def;
        const Bindings sizes = test::image_sizes(2, 6, 5);
        const test::ForcedVariants forced(def, sizes);
        const Tensor input = test::random_input(def, 2, 6, 5, 5);
        const std::vector<float> a = test::logits(*test::engine(def, "cpu"), input);
        for (const std::string& variant : test::kGemmVariantNames) {
          auto gpu = forced.forced(variant);
          const std::vector<float> b = test::logits(*gpu, input);
          std::string summary;
          for (const auto& line : gpu->plan_summary(sizes)) summary += line + "; ";
          std::string values;
          for (size_t e = 0; e < b.size(); ++e) values += fmt::format(" {:.3g}/{:.3g}", a[e], b[e]);
          EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 1e-2)
              << "fp8 " << fp8 << " gate " << gated << " residual " << residual << " " << variant
              << " CPU/CUDA:" << values << " plan: " << summary;
        }
      }
    }
}

TEST(CudaFp8, MBConvPathMatchesCpuEmulation) {
  REQUIRE_GPU();
  for (int k : {3, 5})
    for (int stride : {1, 2})
      for (auto [batch, h, w] : {std::tuple{1, 32, 32}, std::tuple{3, 29, 37}, std::tuple{4, 64, 48}}) {
        ModelDefinition fp32 = test::mbconv_graph(16, k, stride, false);
        ModelDefinition fp8 = quantized(fp32, kExpandedRecipe, 3.0f);
        const double gpu_vs_emulation = test::compare(fp8, batch, h, w);
        // How far FP8 moves the output at all: the CPU's FP8 emulation against its fp32.
        const Tensor in = test::random_input(fp32, batch, h, w, test::compare_seed(batch, h));
        const std::vector<float> ya = test::logits(*test::engine(fp32, "cpu"), in);
        const std::vector<float> yb = test::logits(*test::engine(fp8, "cpu"), in);
        const double fp8_effect = test::rel_l2(yb.data(), ya.data(), ya.size());
        EXPECT_LT(gpu_vs_emulation, 3e-2) << "k" << k << " s" << stride << " batch " << batch;
        EXPECT_LT(gpu_vs_emulation, 0.5 * fp8_effect) << "k" << k << " s" << stride << ": FP8 inactive on the GPU?";
      }
}

// Each depthwise variant forced on both depthwise convs: one reads the stem's fp16 output and
// rounds it to E4M3 as it loads, the other reads the E4M3 an FP8 expand GEMM stored.
TEST(CudaFp8, EveryDepthwiseVariantMatchesCpuEmulation) {
  REQUIRE_GPU();
  for (auto [k, stride] : {std::pair{3, 1}, std::pair{3, 2}, std::pair{5, 1}, std::pair{5, 2}}) {
    test::GraphMaker g(50 + k + stride);
    int x = g.input(3);
    x = g.conv(x, 32, 3, 2, false, Activation::SiLU);
    x = g.conv(x, 32, k, 1, true, Activation::SiLU);
    x = g.squeeze_excite(x, 8);
    x = g.conv(x, 16, 1, 1, false, Activation::None);
    x = g.conv(x, 64, 1, 1, false, Activation::SiLU);
    x = g.conv(x, 64, k, stride, true, Activation::SiLU);
    x = g.squeeze_excite(x, 8);
    x = g.conv(x, 24, 1, 1, false, Activation::None);
    x = g.flatten(g.pool(x));
    x = g.linear(x, 16, Activation::None);
    g.finish(x);
    ModelDefinition def = quantized(g.def, kExpandedRecipe, 3.0f);
    const Bindings sizes = test::image_sizes(3, 61, 39);
    const test::ForcedVariants forced(def, sizes);
    const Tensor input = test::random_input(def, 3, 61, 39, 7);
    const std::vector<float> a = test::logits(*test::engine(def, "cpu"), input);
    for (const std::string& variant : test::kDepthwiseVariantNames) {
      auto gpu = forced.forced(variant);
      const std::vector<float> b = test::logits(*gpu, input);
      int taken = 0;
      for (const std::string& line : gpu->plan_summary(sizes))
        taken += line.find(variant) != std::string::npos && line.find(" fp8") != std::string::npos;
      EXPECT_GE(taken, 1) << "no FP8 depthwise conv ran " << variant;
      EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 3e-2) << variant << " k" << k << " s" << stride;
    }
  }
}

TEST(CudaFp8, EveryFp8GemmVariantMatchesCpuEmulation) {
  REQUIRE_GPU();
  test::GraphMaker g(9);
  int x = g.input(3);
  x = g.conv(x, 48, 3, 2, false, Activation::SiLU);
  int e = g.conv(x, 96, 1, 1, false, Activation::SiLU);
  int d = g.conv(e, 96, 5, 1, true, Activation::SiLU);
  d = g.squeeze_excite(d, 12);
  int y = g.conv(d, 336, 1, 1, false, Activation::None);  // K past one stage
  y = g.conv(y, 48, 1, 1, false, Activation::None);
  y = g.op("add", {y, x});
  y = g.flatten(g.pool(y));
  y = g.linear(y, 24, Activation::None);
  g.finish(y);
  ModelDefinition def = quantized(g.def, kExpandedRecipe, 4.0f);
  const Bindings sizes = test::image_sizes(2, 38, 34);
  const test::ForcedVariants forced(def, sizes);
  // GEMMs: FP8 expand (-> E4M3), project (+gate), 336 -> 48 (+residual), the fp16 classifier; and
  // the depthwise conv and the squeeze-excite mlp
  ASSERT_EQ(forced.choices(), 6u);
  const Tensor input = test::random_input(def, 2, 38, 34, 3);
  const std::vector<float> a = test::logits(*test::engine(def, "cpu"), input);
  for (const char* variant : {"mma_128x64", "mma_64x64", "mma_64x128", "mma_32x64", "mma_128x32"}) {
    auto gpu = forced.forced(variant);
    const std::vector<float> b = test::logits(*gpu, input);
    EXPECT_GE(test::ForcedVariants::taken(*gpu, sizes, variant), 1) << "the forced plan was not used";
    EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 3e-2) << variant;
  }
}

TEST(CudaFp8, CalibratedB0AgreesWithCpuEmulationOnReferenceInputs) {
  REQUIRE_GPU();
  Checkpoint ckpt(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"));
  const Family* family = FamilyRegistry::instance().find_family("efficientnet_b0");
  SafetensorsFile ref(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  Tensor in = ref.to_float("inputs");
  const int batch = static_cast<int>(in.dim(0));
  for (const auto& [name, text] : family->info().recipes) {
    if (name != "fp8-pointwise" && name != "fp8-e4m3-expanded") continue;
    ModelDefinition def = family->build(ckpt), fp32 = def;
    QuantRecipe recipe = parse_recipe(nlohmann::json::parse(text), name);
    auto layers = select_fp8_layers(def, recipe);
    auto pre = classification::PreprocessConfig::from_json(def.task_config["preprocess"]);
    CalibrationOptions calib{test::data_path("data/imagenet-calib-500"), 24, "", 8};
    apply_fp8(def, layers, calibrate_activations(def, layers, pre, recipe, calib));
    auto gpu = test::engine(def, "cuda");
    EXPECT_EQ(gpu->cpu_fallback_nodes(), 0);
    const std::vector<float> a = test::logits(*test::engine(def, "cpu"), in), b = test::logits(*gpu, in),
                             r = test::logits(*test::engine(fp32, "cpu"), in);
    // An E4M3 rounding that one side takes up and the other down (their fp16 inputs differ in the
    // last bit) moves a value by a whole E4M3 step, so GPU and emulation differ more than fp16 and
    // fp32 do; they must still differ clearly less than FP8 differs from fp32 (measured: about half).
    const double gpu_vs_emulation = test::rel_l2(b.data(), a.data(), a.size());
    const double fp8_effect = test::rel_l2(a.data(), r.data(), a.size());
    std::printf("[cuda fp8] %s: GPU vs CPU emulation rel L2 %.2e (max |diff| %.3f); emulation vs fp32 %.2e\n",
                name.c_str(), gpu_vs_emulation, test::max_abs_diff(a.data(), b.data(), a.size()), fp8_effect);
    EXPECT_LT(gpu_vs_emulation, 0.75 * fp8_effect) << name;
    int same = 0;
    for (int n = 0; n < batch; ++n)
      same += test::top_indices(a.data() + n * 1000, 1000, 1) == test::top_indices(b.data() + n * 1000, 1000, 1);
    EXPECT_GE(same, batch - 1) << name;  // the 1300-image agreement is measured by kiln eval (family README)
  }
}

}  // namespace
}  // namespace kiln
