// The Marian family against transformers on the marian-tiny-en-de fixture (a small MarianMTModel
// trained on WMT22 en-de, saved in the Hub's layout): tokenizer, teacher-forced logits, greedy
// and beam search, one source at a time and batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "checkpoints/checkpoint.h"
#include "core/fp8.h"
#include "graph/family_registry.h"
#include "graph/ops/linear.h"
#include "quantize/calibrate.h"
#include "quantize/recipe.h"
#include "tests/seq2seq_reference.h"

namespace kiln::test {
namespace {

constexpr char kFixture[] = "marian-tiny-en-de";
using Marian = Seq2SeqTest<kFixture>;

TEST_F(Marian, TokenizerMatchesTransformers) { expect_tokenizer_checks(*generator_, *ref_); }

// Segmentations of equal score split as sentencepiece 0.2 (transformers' side) splits them:
// "...." as "." "..." and "000" as "0" "00" (transformers' ids for WMT22 en-ru line 1483, and
// the pieces of en-de line 362).
TEST_F(Marian, ExactScoreTiesSplitLikeSentencepieceTwo) {
  std::ifstream in(data_path("checkpoints/marian-tiny-en-de/vocab.json"));
  const nlohmann::json vocab = nlohmann::json::parse(in);
  std::map<int64_t, std::string> piece;
  for (const auto& [p, id] : vocab.items()) piece[id.get<int64_t>()] = p;
  auto pieces = [&](const std::string& text) {
    std::vector<int64_t> ids;
    EXPECT_TRUE(generator_->tokenize(text, false, &ids).ok());
    std::vector<std::string> out;
    for (int64_t id : ids) out.push_back(piece[id]);
    return out;
  };
  const auto told = pieces("I told ya so....");
  ASSERT_GE(told.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(told.end() - 3, told.end()), (std::vector<std::string>{".", "...", "</s>"}));
  const auto pounds = pieces("levels are £500, £1000 and £2500");
  const auto at = std::find(pounds.begin(), pounds.end(), "00");
  ASSERT_NE(at, pounds.end());
  EXPECT_EQ(*(at - 1), "0") << "1000 should be 1 0 00, not 1 00 0";
}

TEST_F(Marian, TeacherForcedLogitsMatchTransformers) {
  for (int i = 0; i < 8; ++i) {
    const TeacherForcedError e = teacher_forced_error(generator_->model(), *ref_, i);
    EXPECT_LT(e.encoder, 1e-4) << "encoder output of source " << i;
    EXPECT_LT(e.logits, 1e-3) << "logits of source " << i;
  }
}

TEST_F(Marian, GreedyMatchesTransformersOneByOneAndBatched) {
  GenerationOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 64;
  o.batch = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
  o.batch = 16;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
}

TEST_F(Marian, BeamSearchMatchesTransformersOneByOne) {
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "default", o), 80);
}

// A repetition penalty needs every logit on the host (not just each row's best tokens): one so
// close to 1 that it changes no choice takes that path and must still give the reference.
TEST_F(Marian, TheFullLogitsPathMatchesTransformersToo) {
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 8;
  o.repetition_penalty = 1.0 + 1e-6;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "default", o), 80);
  o.num_beams = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
}

TEST_F(Marian, BatchedBeamSearchMatchesTransformersBatch) {
  // transformers' batched run: the first 16 sources padded together.
  auto sources = reference_sources(*ref_);
  sources.resize(16);
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 5;  // fewer slots than sources: finished sources make room for the next
  std::vector<GeneratedText> out;
  ASSERT_TRUE(generator_->generate_ids(sources, o, &out).ok());
  const int64_t pad = 5554;
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i].ids, strip_padding(ref_->json["batch16_default_ids"][i].get<std::vector<int64_t>>(), pad))
        << "source " << i;
}

// An fp16 bundle on the CPU: the fast kernels' decoder steps read the dense layers' weights as
// halves where the bundle holds them (cpu/gemv.h); the reference kernels widen those at load
// (both gather the embedding rows the same way). Both compute in f32 from the same rounded
// weights, so greedy decoding one source at a time (one-row steps: the half-weight loop) gives
// the same ids on both, and the fp16 weights keep most of transformers' fp32 outputs (80 of 80
// greedy when measured).
TEST(MarianFp16, CpuReadsHalfWeightsLikeTheWidenedReference) {
  const Seq2SeqReference ref(kFixture);
  std::unique_ptr<TextGenerator> fast, reference;
  ASSERT_TRUE(TextGenerator::load(seq2seq_bundle(kFixture, "fp16"), &fast, "cpu").ok());
  ASSERT_TRUE(TextGenerator::load(seq2seq_bundle(kFixture, "fp16"), &reference, "cpu-reference").ok());
  GenerationOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 64;
  o.batch = 1;
  std::vector<GeneratedText> a, b;
  ASSERT_TRUE(fast->generate_ids(reference_sources(ref), o, &a).ok());
  ASSERT_TRUE(reference->generate_ids(reference_sources(ref), o, &b).ok());
  ASSERT_EQ(a.size(), b.size());
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ids, b[i].ids) << "source " << i;
    EXPECT_NEAR(a[i].score, b[i].score, 1e-4) << "source " << i;
    same += a[i].ids == ref.json["examples"][i]["greedy_ids"].get<std::vector<int64_t>>();
  }
  std::printf("fp16 on the CPU: greedy %d/80 identical to transformers fp32\n", same);
  EXPECT_GE(same, 76);
}

// FP8 (the family's default recipe: every dense layer of the encoder and decoder layers),
// calibrated on WMT22 en-de lines 1-40: training text that is none of the reference's sources
// (those are lines 0, 45, 90, ... and 1800 on). On the CPU, whose emulation is the GPU's FP8
// arithmetic, against transformers' fp32 outputs: teacher-forced logits within 1.5 (1.06 at most
// when measured: Marian's inputs are scaled by sqrt(d_model)), and greedy decoding keeps its
// outputs on the 40 training sentences (39 of 40 when measured); on the 40 unseen ones, where
// this barely trained model's choices are near ties, it keeps 11 (families/marian/README.md,
// FP8 study). The bounds leave a margin over the measured values.
TEST(MarianFp8, CalibratedOnTrainingTextKeepsTheTrainedOutputs) {
  expect_fp8_close(kFixture, wmt22_lines("wmt22.en-de.en", 1, 41), 1.5, 37, 6);
}

// The family's recipes pick layers by name in every graph: fp8-linear the 22 dense layers of the
// 2 + 2 layers (self-attention's q, k and v stacked into one; each decoder layer's cross-attention
// keys and values, also stacked, in the encoder graph, the rest of the decoder in both step
// graphs), fp8-ffn their 8 feed-forward layers, fp8-all the output projection too (its own copy
// of the tied embedding: the gathers' table stays as it is).
TEST(MarianFp8, RecipesSelectLayersInEveryGraph) {
  Checkpoint ckpt(data_path("checkpoints/marian-tiny-en-de"));
  const Family* family = FamilyRegistry::instance().find_family("MarianMTModel");
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->info().default_recipe, "fp8-linear");
  std::map<std::string, std::string> recipes(family->info().recipes.begin(), family->info().recipes.end());
  auto select = [&](const std::string& name, ModelDefinition& def) {
    return select_fp8_layers(def, parse_recipe(nlohmann::json::parse(recipes.at(name)), name));
  };
  ModelDefinition def = family->build(ckpt);
  auto distinct = [](const std::vector<Fp8Layer>& layers) {
    std::map<std::string, int> per_graph;
    std::set<std::string> weights;
    for (const auto& l : layers) {
      ++per_graph[l.graph];
      weights.insert(l.weight);
    }
    return std::make_pair(weights.size(), per_graph);
  };
  const auto [linear, linear_graphs] = distinct(select("fp8-linear", def));
  EXPECT_EQ(linear, 22u);
  EXPECT_EQ(linear_graphs, (std::map<std::string, int>{{"encoder", 10}, {"decoder_step", 12}, {"decoder_topk", 12}}));
  EXPECT_EQ(distinct(select("fp8-ffn", def)).first, 8u);
  const auto all = select("fp8-all", def);
  EXPECT_EQ(distinct(all).first, 23u);
  Fp8Clips clips;
  for (const auto& l : all) clips[l.weight] = 4.0f;
  const std::vector<float> embedding = def.weights.at("model.shared.weight").data;
  apply_fp8(def, all, clips);
  EXPECT_EQ(def.weights.at("model.shared.weight").data, embedding);
  for (float v : def.weights.at("model.shared.weight.weight").data) ASSERT_EQ(round_to_e4m3(v), v);
  for (const char* graph : {"decoder_step", "decoder_topk"}) {
    const Graph& g = def.graph(graph);
    int fp8 = 0;
    for (const Node& n : g.nodes())
      fp8 += n.op == "linear" && g.values()[n.inputs[linear_input::Weight]].dtype == DType::F8E4M3;
    EXPECT_EQ(fp8, 13) << graph;
  }
}

}  // namespace
}  // namespace kiln::test
