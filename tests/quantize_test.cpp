// FP8 recipes, calibration and the CPU engine's FP8 emulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "checkpoints/safetensors.h"
#include "core/error.h"
#include "core/fp8.h"
#include "graph/builder.h"
#include "graph/family_registry.h"
#include "graph/ops/conv2d.h"
#include "quantize/calibrate.h"
#include "quantize/recipe.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

nlohmann::json seed_recipe() {
  return {
      {"name", "t"}, {"layers", {{{"kind", "pointwise"}, {"min_spatial", 2}}}}, {"calibration", {{"method", "max"}}}};
}

std::string recipe_error(const nlohmann::json& j) {
  return test::error_message([&] { parse_recipe(j, "t.json"); });
}

TEST(Recipe, ParsesAndRejectsBadInput) {
  EXPECT_EQ(recipe_error(seed_recipe()), "");
  auto r = seed_recipe();
  r["layres"] = 1;
  EXPECT_NE(recipe_error(r).find("unknown key 'layres'"), std::string::npos);
  r = seed_recipe();
  r["layers"] = nlohmann::json::array();
  EXPECT_NE(recipe_error(r).find("non-empty"), std::string::npos);
  r = seed_recipe();
  r["layers"][0]["kind"] = "attention";
  EXPECT_NE(recipe_error(r).find("'attention'"), std::string::npos);
  r = seed_recipe();
  r["calibration"]["method"] = "entropy";
  EXPECT_NE(recipe_error(r).find("'entropy'"), std::string::npos);
  r = seed_recipe();
  r["layers"][0]["channels"] = "wider";
  EXPECT_NE(recipe_error(r).find("'wider'"), std::string::npos);
  r = seed_recipe();
  r["layers"][0]["quantize"] = "output";
  EXPECT_NE(recipe_error(r).find("'output'"), std::string::npos);
  r = seed_recipe();
  r["format"] = "e5m2";
  EXPECT_NE(recipe_error(r).find("e4m3"), std::string::npos);
  r = seed_recipe();
  r["layers"][0]["min_spatial"] = 1e300;
  EXPECT_NE(recipe_error(r).find("min_spatial must be an integer"), std::string::npos);
  r = seed_recipe();
  r.erase("name");
  EXPECT_NE(recipe_error(r).find("name"), std::string::npos);
  // Linear rules select by name; a conv's criteria do not apply to them.
  r = seed_recipe();
  r["layers"] = {{{"kind", "linear"}, {"match", "*.fc1"}}};
  EXPECT_EQ(recipe_error(r), "");
  EXPECT_EQ(parse_recipe(r, "t.json").layers[0].match, "*.fc1");
  r["layers"][0]["min_spatial"] = 2;
  EXPECT_NE(recipe_error(r).find("unknown key 'min_spatial'"), std::string::npos);
  r["layers"] = {{{"kind", "linear"}, {"match", ""}}};
  EXPECT_NE(recipe_error(r).find("match"), std::string::npos);
  r["layers"] = {{{"kind", "linear"}, {"match", "*a*a*a*a*a*b"}}};  // backtracking without end
  EXPECT_NE(recipe_error(r).find("at most four"), std::string::npos);
  EXPECT_NE(recipe_error(nlohmann::json::array()).find("object"), std::string::npos);
}

ModelDefinition b0() {
  Checkpoint ckpt(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"));
  return FamilyRegistry::instance().find_family("efficientnet_b0")->build(ckpt);
}

TEST(Recipe, TheFamilyRecipesSelectTheSeedStudysLayers) {
  ModelDefinition def = b0();
  const Family* family = FamilyRegistry::instance().find_family("efficientnet_b0");
  const auto& recipes = family->info().recipes;
  ASSERT_FALSE(recipes.empty());
  EXPECT_EQ(family->info().default_recipe, "fp8-pointwise");
  std::map<std::string, std::vector<Fp8Layer>> selected;
  for (const auto& [name, text] : recipes)
    selected[name] = select_fp8_layers(def, parse_recipe(nlohmann::json::parse(text), name));
  EXPECT_EQ(selected["fp8-pointwise"].size(), 32u);  // 15 expand, 16 project and the head conv: the seed study's 32
  EXPECT_EQ(selected["fp8-pointwise-depthwise"].size(), 32u + 16u);
  EXPECT_EQ(selected["fp8-project"].size(), 16u);
  // fp8-e4m3-expanded: the 32 pointwise convs, and the 16 depthwise convs' inputs only.
  const auto& expanded = selected["fp8-e4m3-expanded"];
  EXPECT_EQ(expanded.size(), 48u);
  EXPECT_EQ(std::count_if(expanded.begin(), expanded.end(), [](const Fp8Layer& l) { return !l.weights; }), 16);
}

// The emulation rounds an FP8 layer's input to fp16 first (the precision layers exchange on the
// GPU), then to E4M3: 1.0625 is the midpoint of E4M3's 1.0 and 1.125.
TEST(Fp8, EmulationRoundsTheFp16InputToE4M3) {
  ModelDefinition def;
  GraphBuilder b(def);
  const int in = b.input("x", DType::F32, {{1, ""}, {1, ""}, {1, ""}, {8, ""}});
  Tensor w({8, 1, 1, 8}), scale({8});
  for (int o = 0; o < 8; ++o) {
    w.data[o * 8 + o] = 1.0f;  // identity
    scale.data[o] = 1.0f;
  }
  const int wv = b.weight("pw.weight", w, DType::F8E4M3), sv = b.weight("pw.weight_scale", scale);
  b.output("y", b.op("conv2d", "pw", {in, wv, -1, sv}, {{"input_scale", 1.0}}));
  def.validate();
  Engine cpu(def.graph(), def.constants(), EngineOptions{"cpu"});
  // 1.0625 + 1.2e-7 is above the midpoint in fp32 (-> 1.125) but is 1.0625 in fp16 (a tie -> 1.0,
  // the even one); 1.0635 stays above the midpoint in fp16 too.
  std::vector<float> x(8, 1.06250012f);
  x[1] = 1.0635f;
  const auto y = cpu.run({HostTensor::from_f32("x", {1, 1, 1, 8}, x)})[0].to_f32();
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.125f);
}

TEST(Fp8, InputOnlyLayersKeepTheirWeightsAndSurviveABundle) {
  ModelDefinition def = b0();
  const Graph& g = def.graph();
  int dw = -1;
  for (int i = 0; i < static_cast<int>(g.nodes().size()) && dw < 0; ++i)
    if (g.nodes()[i].op == "conv2d" && g.nodes()[i].attrs.get_int("groups") > 1) dw = i;
  ASSERT_GE(dw, 0);
  const std::string weight = g.values()[g.nodes()[dw].inputs[conv2d_input::Weight]].name;
  const std::vector<float> before = def.weights.at(weight).data;
  apply_fp8(def, {{"main", dw, false, weight}}, {{weight, 3.5f}});
  const Node& n = def.graph().nodes()[dw];
  EXPECT_FLOAT_EQ(n.attrs.get_float("input_scale"), 3.5f / 448);
  EXPECT_EQ(n.input(conv2d_input::WeightScale), -1);
  EXPECT_EQ(def.weights.at(weight).data, before);
  std::string path = test::binary_dir() + "/b0-fp8-input-only.bundle";
  BuildInfo info;
  info.precision = "fp8";
  write_bundle(path, def, info);
  auto bundle = Bundle::open(path);
  const Node& m = bundle->graph("main").nodes()[dw];
  EXPECT_EQ(m.attrs.get_float("input_scale"), n.attrs.get_float("input_scale"));
  EXPECT_EQ(m.input(conv2d_input::WeightScale), -1);
  EXPECT_EQ(bundle->tensor(weight).dtype, DType::F16);
}

TEST(Calibration, HistogramClips) {
  AbsHistogram h;
  std::vector<float> x(100000);
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  for (auto& v : x) v = d(rng);
  x[7] = 50.0f;  // one outlier
  h.add(x.data(), x.size());
  EXPECT_EQ(h.clip("max", 0), 50.0f);
  float p = h.clip("percentile", 99.9);
  EXPECT_GT(p, 3.0f);  // |N(0,1)| 99.9th percentile is 3.29
  EXPECT_LT(p, 3.6f);
  // E4M3 is floating point: a wide clip costs the bulk little precision, while clipping the
  // outlier costs its whole squared excess, so the MSE clip stays at the maximum here.
  EXPECT_EQ(h.clip("mse", 0), 50.0f);
}

TEST(Fp8, CalibratedB0StaysCloseToFp32OnTheCpu) {
  ModelDefinition def = b0(), q = b0();
  QuantRecipe recipe = parse_recipe(seed_recipe(), "seed");
  auto layers = select_fp8_layers(q, recipe);
  auto pre = classification::PreprocessConfig::from_json(q.task_config["preprocess"]);
  CalibrationOptions calib{test::data_path("data/imagenet-calib-500"), 24, "", 8};
  apply_fp8(q, layers, calibrate_activations(q, layers, pre, recipe, calib));
  int fp8 = 0;
  const Graph& qg = q.graph();
  for (const auto& n : qg.nodes()) {
    if (n.op != "conv2d" || qg.values()[n.inputs[conv2d_input::Weight]].dtype != DType::F8E4M3) continue;
    ++fp8;
    for (float v : q.weights.at(qg.values()[n.inputs[conv2d_input::Weight]].name).data)
      ASSERT_EQ(round_to_e4m3(v), v) << n.name;
  }
  EXPECT_EQ(fp8, 32);
  // Through a bundle, so that F8_E4M3 storage is exercised too.
  std::string path = test::binary_dir() + "/b0-fp8-test.bundle";
  BuildInfo info;
  info.precision = "fp8";
  write_bundle(path, q, info);
  auto bundle = Bundle::open(path);
  EXPECT_EQ(bundle->tensor(qg.values()[qg.nodes()[layers[0].node].inputs[conv2d_input::Weight]].name).dtype,
            DType::F8E4M3);
  Engine ref(def.graph(), def.constants(), EngineOptions{"cpu"});
  Engine emu(bundle->graph("main"), bundle->constants(), EngineOptions{"cpu"});
  SafetensorsFile inputs(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  Tensor in = inputs.to_float("inputs");
  const std::vector<float> a = test::logits(ref, in), b = test::logits(emu, in);
  double diff = test::max_abs_diff(a.data(), b.data(), a.size());
  EXPECT_GT(diff, 1e-3) << "FP8 emulation changed nothing";
  // The fast CPU kernels run the FP8 layers with the same rounding and widened weights. Their
  // fp32 sums differ from the reference's in the last bits, which flips some inputs to the
  // other E4M3 neighbour, so the two are not bit-identical: both must be as close to fp32.
  Engine emu_reference(bundle->graph("main"), bundle->constants(), EngineOptions{"cpu-reference"});
  const std::vector<float> r = test::logits(emu_reference, in);
  const double fast_err = test::rel_l2(b.data(), a.data(), a.size()),
               ref_err = test::rel_l2(r.data(), a.data(), a.size());
  std::printf("fp8 rel. L2 from fp32: fast kernels %.4f, reference kernels %.4f\n", fast_err, ref_err);
  EXPECT_LT(fast_err, ref_err * 1.25);
  for (int n = 0; n < 8; ++n)
    EXPECT_EQ(test::top_indices(r.data() + n * 1000, 1000, 1), test::top_indices(b.data() + n * 1000, 1000, 1)) << n;
  // Calibrated on 24 images only (to keep the test short): logits move, the ranking mostly not.
  EXPECT_LT(test::rel_l2(b.data(), a.data(), a.size()), 0.2);
  int same = 0;
  for (int n = 0; n < 8; ++n)
    same += test::top_indices(a.data() + n * 1000, 1000, 1) == test::top_indices(b.data() + n * 1000, 1000, 1);
  EXPECT_GE(same, 7);
}

}  // namespace
}  // namespace kiln
