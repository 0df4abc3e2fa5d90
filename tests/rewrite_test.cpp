// The rewrites a GPU applies (graph/rewrites/), checked on the CPU: a stand-in backend applies
// them with the CPU's kernels, which run every fused form, so the rewritten graph must compute
// what the original computes. CI thereby checks every fusion the CUDA backend relies on.
#include <limits>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "checkpoints/safetensors.h"
#include "graph/builder.h"
#include "graph/encoder_decoder.h"
#include "graph/family_registry.h"
#include "graph/rewrites/rewrite.h"
#include "tests/fusing_backend.h"
#include "tests/test_graphs.h"
#include "tests/transformer_graphs.h"

namespace kiln {
namespace {
using test::fusing_engine;

std::map<std::string, int> op_counts(const Engine& e) {
  std::map<std::string, int> ops;
  for (const Node& n : e.executed().nodes()) ops[n.op]++;
  return ops;
}

TEST(Rewrites, TheMBConvPathFusesAndComputesTheSame) {
  const ModelDefinition def = test::mbconv_graph(16, 3, 2, false);
  const Tensor input = test::random_input(def, 3, 29, 37, 5);
  const std::vector<float> want = test::logits(*test::engine(def, "cpu"), input);
  auto fused = fusing_engine(def, false);
  auto ops = op_counts(*fused);
  EXPECT_EQ(ops["mul"], 0);
  EXPECT_EQ(ops["add"], 0);
  EXPECT_EQ(ops["transpose"], 0);
  EXPECT_EQ(ops["mlp"], 2);
  EXPECT_EQ(ops["reduce"], 1);  // the SE means are the depthwise convs'; the head's pool feeds a reshape
  const std::vector<float> got = test::logits(*fused, input);
  EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-4);
  // In fp16 the graph casts at its edges, and the casts fold into the first and last layers.
  auto half = fusing_engine(def, true);
  ops = op_counts(*half);
  EXPECT_EQ(ops["cast"], 0);
  // f32 activations left: the two squeeze-excite means (f32 by definition) and the logits.
  int f32_activations = 0;
  for (const Value& v : half->executed().values())
    f32_activations += v.kind == ValueKind::Activation && v.dtype == DType::F32;
  EXPECT_EQ(f32_activations, 3);
  const std::vector<float> h = test::logits(*half, input);
  EXPECT_LT(test::rel_l2(h.data(), want.data(), want.size()), 5e-3);
}

// A decoder step's head splits and merges move only the step's dim of 1: views, no transposes
// left; the step's answers stay the same over several steps of its cache. (The encoder's move
// the sequence dim: its attention reads them in place, below.)
TEST(Rewrites, DecoderStepTransposesBecomeViews) {
  const auto def = test::tiny_transformer();
  Engine reference(def.graph("decoder_step"), def.constants(), EngineOptions{"cpu"});
  auto fused = fusing_engine(def, false, "decoder_step");
  auto ops = op_counts(*fused);
  EXPECT_EQ(ops["transpose"], 0);
  EXPECT_GE(ops["reshape"], 4);  // the heads merged after each layer's attention
  const int64_t batch = 2;
  for (int64_t t = 0; t < 4; ++t) {
    const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {batch, 1}, {3 + t, 40 - t}),
                                        HostTensor::from_i64("position", {1}, {t}),
                                        HostTensor::from_i64("length", {batch}, {t + 1, t + 1})};
    const auto want = reference.run(in)[0].to_f32(), got = fused->run(in)[0].to_f32();
    EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-5) << "step " << t;
  }
}

// Self-attention without a cache (the encoder, with its padding mask; the whole-sequence decoder,
// causal) takes its layer's split and the head moves around it: one qkv_attention node a layer
// reading the stacked projection and writing the heads merged, no split or transpose left. The
// answers stay the graph's as built, masked positions included.
TEST(Rewrites, ASelfAttentionReadsItsStackedProjection) {
  const auto def = test::tiny_transformer();
  const float inf = std::numeric_limits<float>::infinity();
  for (const char* graph : {"encoder", "decoder"}) {
    const bool encoder = std::string(graph) == "encoder";
    auto fused = fusing_engine(def, false, graph);
    const auto ops = op_counts(*fused);
    EXPECT_EQ(ops.at("qkv_attention"), 2) << graph;
    for (const char* gone : {"attention", "split", "transpose"}) EXPECT_EQ(ops.count(gone), 0u) << graph << " " << gone;
    Engine reference(def.graph(graph), def.constants(), EngineOptions{"cpu"});
    for (int64_t seq : {1, 9, 70}) {
      std::vector<int64_t> ids(2 * seq), positions(seq);
      for (int64_t i = 0; i < seq; ++i) {
        positions[i] = i;
        ids[i] = (3 * i + 1) % 50;
        ids[seq + i] = (7 * i + 4) % 50;
      }
      std::vector<HostTensor> in = {HostTensor::from_i64("ids", {2, seq}, ids),
                                    HostTensor::from_i64("positions", {seq}, positions)};
      if (encoder) {
        std::vector<float> mask(2 * seq, 0.0f);
        for (int64_t i = seq / 2 + 1; i < seq; ++i) mask[seq + i] = -inf;  // row 1 padded
        in.push_back(HostTensor::from_f32("mask", {2, seq}, mask));
      }
      const auto want = reference.run(in)[0].to_f32(), got = fused->run(in)[0].to_f32();
      EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-5) << graph << " " << seq;
    }
  }
}

// A value between the head moves that the graph also outputs keeps the nodes that make it: the
// attention's heads-first output given out as well leaves the layer unfused, and both outputs
// are the graph's as built.
TEST(Rewrites, AHeadMoveThatIsAlsoAnOutputStays) {
  ModelDefinition def;
  GraphBuilder b(def);
  const int64_t heads = 2, d = 4;
  const int qkv = b.input("qkv", DType::F32, {{1, ""}, {5, ""}, {3 * heads * d, ""}});
  const auto parts = b.graph().add_node("split", "parts", {qkv},
                                        {{"axis", int64_t{-1}}, {"sizes", std::vector<int64_t>(3, heads * d)}});
  std::vector<int> moved;
  for (int p = 0; p < 3; ++p) moved.push_back(b.split_heads(parts[p], "part" + std::to_string(p), heads, d, ""));
  const int a = b.op("attention", "attention", {moved[0], moved[1], moved[2]});
  b.output("merged", b.merge_heads(a, "attention", ""));
  b.output("heads_first", a);
  def.validate();
  auto fused = fusing_engine(def, false);
  EXPECT_EQ(op_counts(*fused).count("qkv_attention"), 0u);
  std::vector<float> x(5 * 3 * heads * d);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 13) * 0.1f - 0.6f;
  const std::vector<HostTensor> in = {HostTensor::from_f32("qkv", {1, 5, 3 * heads * d}, x)};
  const auto want = Engine(def.graph(), def.constants(), EngineOptions{"cpu"}).run(in), got = fused->run(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t o = 0; o < 2; ++o) {
    const auto w = want[o].to_f32(), g = got[o].to_f32();
    EXPECT_LT(test::max_abs_diff(g.data(), w.data(), w.size()), 1e-6) << o;
  }
}

// An encoder-decoder's graphs (graph/encoder_decoder.cpp) through the GPU's rewrites: the
// encoder's self-attention reads its stacked projection, and each decoder layer's cross-attention
// keys and values go into their slots straight from that layer's k/v projection (write_heads),
// no split, transpose or write_rows left. The encoder's output, and decoder steps reading the
// slots it wrote (a source shorter than the slots' capacity, one slot left alone), stay the
// graphs' answers as built.
TEST(Rewrites, AnEncoderWritesItsCrossAttentionHeadsFromTheProjection) {
  EncoderDecoderConfig c;
  c.d_model = 16;
  c.vocab = 30;
  c.encoder_layers = c.decoder_layers = 2;
  c.encoder_heads = c.decoder_heads = 2;
  c.encoder_ffn = c.decoder_ffn = 32;
  c.source_capacity = 16;
  c.target_capacity = 8;
  std::mt19937 rng(5);
  std::map<std::string, Tensor> drawn;  // one tensor a name, whichever graph asks first
  auto random = [&](const std::string& name, const Shape& shape) {
    auto [at, fresh] = drawn.try_emplace(name, Tensor(shape));
    std::normal_distribution<float> dist(0.0f, 0.3f);
    if (fresh)
      for (auto& v : at->second.data) v = dist(rng);
    return at->second;
  };
  EncoderDecoderWeights w;
  w.encoder_embed = w.decoder_embed = {"embed", random("embed", {c.vocab, c.d_model})};
  w.encoder_positions = w.decoder_positions = {"positions", random("positions", {c.source_capacity, c.d_model})};
  w.lm_head = w.encoder_embed;
  w.load = random;
  ModelDefinition def;
  build_encoder_decoder(def, c, w);
  const auto ops = op_counts(*fusing_engine(def, false, "encoder"));
  EXPECT_EQ(ops.at("qkv_attention"), 2);
  EXPECT_EQ(ops.at("write_heads"), 4);
  for (const char* gone : {"split", "transpose", "write_rows"}) EXPECT_EQ(ops.count(gone), 0u) << gone;

  auto fusing = std::make_shared<test::FusingBackend>(false);
  EngineOptions fused_options;
  fused_options.backend = fusing;
  auto ref_states = std::make_shared<StateStore>(), fused_states = std::make_shared<StateStore>();
  Engine ref_encoder(def.graph("encoder"), def.constants(), EngineOptions{"cpu"}, ref_states);
  Engine ref_step(def.graph("decoder_step"), def.constants(), EngineOptions{"cpu"}, ref_states);
  Engine encoder(def.graph("encoder"), def.constants(), fused_options, fused_states);
  Engine step(def.graph("decoder_step"), def.constants(), fused_options, fused_states);
  // Two sources of 5 and 3 tokens into slots 2 and 0 of 3, 8 positions each.
  const std::vector<HostTensor> sources = {HostTensor::from_i64("ids", {2, 5}, {3, 9, 14, 2, 7, 21, 4, 11, 0, 0}),
                                           HostTensor::from_i64("positions", {5}, {0, 1, 2, 3, 4}),
                                           HostTensor::from_i64("length", {2}, {5, 3}),
                                           HostTensor::from_i64("slots", {3}, {1, -1, 0}),
                                           HostTensor::from_i64("memory_capacity", {8}, std::vector<int64_t>(8))};
  const auto want_hidden = ref_encoder.run(sources)[0].to_f32(), hidden = encoder.run(sources)[0].to_f32();
  EXPECT_LT(test::max_abs_diff(hidden.data(), want_hidden.data(), want_hidden.size()), 1e-5);
  // Row 0 decodes source 0 (slot 2), row 1 source 1 (slot 0).
  HostTensor cross = HostTensor::zeros("cross_rows", DType::I32, {2, 8});
  HostTensor cache = HostTensor::zeros("cache_rows", DType::I32, {2, 8});
  for (int j = 0; j < 8; ++j) cross.as<int32_t>()[j] = 2, cache.as<int32_t>()[8 + j] = 1;
  for (int64_t t = 0; t < 3; ++t) {
    const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {2, 1}, {5 + t, 17 - t}),
                                        HostTensor::from_i64("position", {2}, {t, t}),
                                        HostTensor::from_i64("length", {2}, {t + 1, t + 1}),
                                        HostTensor::from_i64("source_length", {2}, {5, 3}),
                                        HostTensor::from_i64("slot_capacity", {3}, {0, 0, 0}),
                                        HostTensor::from_i64("cache_capacity", {8}, std::vector<int64_t>(8)),
                                        cache,
                                        cross};
    const auto want = ref_step.run(in)[0].to_f32(), got = step.run(in)[0].to_f32();
    EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-5) << "step " << t;
  }
}

// A decoder step's self-attention takes its layer's split and two cache writes: one
// kv_cache_attention node a layer reading the stacked projection. The encoder (no cache) keeps
// its attention. The steps' answers stay the graph's as built, with rows at different positions.
TEST(Rewrites, ASelfAttentionStepTakesItsSplitAndCacheWrites) {
  const auto def = test::tiny_transformer();
  auto fused = fusing_engine(def, false, "decoder_step");
  auto ops = op_counts(*fused);
  EXPECT_EQ(ops["kv_cache_attention"], 2);
  EXPECT_EQ(ops.count("dynamic_update_slice"), 0u);
  EXPECT_EQ(ops.count("split"), 0u);
  EXPECT_EQ(ops.count("attention"), 0u);
  EXPECT_EQ(op_counts(*fusing_engine(def, false, "encoder")).count("kv_cache_attention"), 0u);
  Engine reference(def.graph("decoder_step"), def.constants(), EngineOptions{"cpu"});
  for (int64_t t = 0; t < 4; ++t) {
    const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {2, 1}, {7 + t, 20 - t}),
                                        HostTensor::from_i64("position", {1}, {t}),
                                        HostTensor::from_i64("length", {2}, {t + 1, t + 1})};
    const auto want = reference.run(in)[0].to_f32(), got = fused->run(in)[0].to_f32();
    EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-5) << "step " << t;
  }
}

// An in-place node updates each state once, and reads none it updates through another input:
// one cache given as both of kv_cache_attention's, or a state written into itself, is refused;
// so is a cache given as one of them while the other is the output of a write into that same
// cache (two values, one memory).
TEST(Rewrites, AnInPlaceNodeUpdatesEachStateOnceAndReadsItOnlyThere) {
  enum Form { Twice, IntoItself, ThroughAnEarlierWrite };
  auto refused = [](Form form) {
    Graph g;
    const int k = g.add_state("k", DType::F32, fixed_shape({1, 2, 8, 4}));
    const int v = g.add_state("v", DType::F32, fixed_shape({1, 2, 8, 4}));
    const int offset = g.add_input("offset", DType::I64, fixed_shape({1}));
    const int qkv = g.add_input("qkv", DType::F32, fixed_shape({1, 1, 24}));
    if (form == Twice) {
      g.add_output("y", g.add_node("kv_cache_attention", "attention", {k, k, qkv, offset})[2]);
    } else if (form == IntoItself) {
      g.add_output("y", g.add("dynamic_update_slice", "write", {v, v, offset}, {{"axis", int64_t{2}}}));
    } else {
      const int row = g.add_input("row", DType::F32, fixed_shape({1, 2, 1, 4}));
      const int written = g.add("dynamic_update_slice", "write", {k, row, offset}, {{"axis", int64_t{2}}});
      g.add_output("y", g.add_node("kv_cache_attention", "attention", {written, k, qkv, offset})[2]);
    }
    try {
      g.validate();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused(Twice).find("updates one value twice"), std::string::npos) << refused(Twice);
  EXPECT_NE(refused(IntoItself).find("reads a value it updates"), std::string::npos) << refused(IntoItself);
  EXPECT_NE(refused(ThroughAnEarlierWrite).find("is updated in place but also read by attention"), std::string::npos)
      << refused(ThroughAnEarlierWrite);
}

// In a post-norm transformer every layer norm that a linear reads fuses into it (the tiny
// encoder's last feeds no linear), and its output stays there for the residual that also reads
// it. A linear whose residual is the norm's output itself stays apart: fused, the node would read
// what it makes.
TEST(Rewrites, ALayerNormFusesIntoTheLinearReadingIt) {
  const auto def = test::tiny_transformer();
  for (const char* graph : {"decoder_step", "encoder"}) {
    const auto ops = op_counts(*fusing_engine(def, false, graph));
    const bool encoder = std::string(graph) == "encoder";
    EXPECT_EQ(ops.at("norm_linear"), encoder ? 3 : 4) << graph;
    EXPECT_EQ(ops.count("layer_norm") ? ops.at("layer_norm") : 0, encoder ? 1 : 0) << graph;
  }
  Engine reference(def.graph("decoder_step"), def.constants(), EngineOptions{"cpu"});
  auto fused = fusing_engine(def, false, "decoder_step");
  for (int64_t t = 0; t < 3; ++t) {
    const std::vector<HostTensor> in = {HostTensor::from_i64("ids", {2, 1}, {5 + t, 30 - t}),
                                        HostTensor::from_i64("position", {1}, {t}),
                                        HostTensor::from_i64("length", {2}, {t + 1, t + 1})};
    const auto want = reference.run(in)[0].to_f32(), got = fused->run(in)[0].to_f32();
    EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-5) << "step " << t;
  }
  ModelDefinition own;
  GraphBuilder b(own);
  const int x = b.input("x", DType::F32, {{2, ""}, {8, ""}});
  Tensor gamma({8}), beta({8}), w({8, 8}), bias({8});
  for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = static_cast<float>((i * 5) % 7) * 0.1f - 0.3f;
  for (size_t i = 0; i < 8; ++i) gamma.data[i] = 1.0f + 0.1f * static_cast<float>(i);
  const int y = b.layer_norm(x, "norm", gamma, beta, 1e-5);
  b.output("out", b.linear(y, "proj", w, bias, Activation::None, {}, y));
  own.validate();
  auto fused_own = fusing_engine(own, false);
  EXPECT_EQ(op_counts(*fused_own).count("norm_linear"), 0u);
  std::vector<float> xs(16);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 3) % 11) * 0.5f;
  const std::vector<HostTensor> in = {HostTensor::from_f32("x", {2, 8}, xs)};
  const auto want = Engine(own.graph(), own.constants(), EngineOptions{"cpu"}).run(in)[0].to_f32();
  const auto got = fused_own->run(in)[0].to_f32();
  EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-5);
}

// A conv writes E4M3 for its FP8 reader only where the backend runs both so: a backend whose
// fast kernels take E4M3 input only in some convs keeps fp16 between the others.
TEST(Rewrites, AnFp8OutputOnlyWhereItsReaderKeepsAFastKernel) {
  ModelDefinition def;
  GraphBuilder b(def);
  const int x = b.input("x", DType::F16, {{1, ""}, {4, ""}, {4, ""}, {8, ""}});
  Tensor w({8, 1, 1, 8}), scale({8});
  for (int o = 0; o < 8; ++o) w.data[o * 8 + o] = scale.data[o] = 1.0f;
  const int a = b.op("conv2d", "a", {x, b.weight("a.weight", w, DType::F16)});
  const int wq = b.weight("b.weight", w, DType::F8E4M3), sq = b.weight("b.weight_scale", scale);
  b.output("y", b.op("conv2d", "b", {a, wq, -1, sq}, {{"input_scale", 0.5}}));
  def.validate();
  auto rewritten = [&](const std::function<bool(const Graph&, const Node&)>& fast) {
    Graph g = def.graph();
    for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) g.node(i).device = "gpu";
    fuse_fp8_output(g, RewriteContext{"gpu", fast});
    return g.values()[a].dtype;
  };
  EXPECT_EQ(rewritten([](const Graph&, const Node&) { return true; }), DType::F8E4M3);
  EXPECT_EQ(rewritten([](const Graph& g, const Node& n) {
              return !(n.op == "conv2d" && g.values()[n.inputs[0]].dtype == DType::F8E4M3);
            }),
            DType::F16);
}

// A generator's log_softmax -> topk becomes one node that picks what the two did, bans
// included; log-probabilities something else reads stay.
TEST(Rewrites, LogSoftmaxThenTopkFusesAndPicksTheSame) {
  auto graph_with = [](bool scores_out) {
    ModelDefinition def;
    GraphBuilder b(def);
    const int x = b.input("x", DType::F32, {{3, ""}, {50, ""}});
    const int banned = b.input("banned", DType::I64, {{3, ""}, {2, ""}});
    const int scores = b.op("log_softmax", "log_probs", {x, banned});
    const auto best = b.graph().add_node("topk", "best", {scores}, {{"k", int64_t{4}}});
    b.output("scores", best[0]);
    b.output("tokens", best[1]);
    if (scores_out) b.output("log_probs", scores);
    def.validate();
    return def;
  };
  std::vector<float> x(150);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 50) * 0.25f - 3.0f;
  // Row 0 bans its two best tokens, row 1 nothing (padding), row 2 one token twice.
  const std::vector<HostTensor> in = {HostTensor::from_f32("x", {3, 50}, x),
                                      HostTensor::from_i64("banned", {3, 2}, {27, 4, -1, -1, 5, 5})};
  const ModelDefinition def = graph_with(false);
  Engine reference(def.graph(), def.constants(), EngineOptions{"cpu"});
  auto fused = fusing_engine(def, false);
  auto ops = op_counts(*fused);
  EXPECT_EQ(ops["log_softmax_topk"], 1);
  EXPECT_EQ(ops["log_softmax"] + ops["topk"], 0);
  const auto want = reference.run(in), got = fused->run(in);
  EXPECT_EQ(got[1].to_f32(), want[1].to_f32());
  const auto v = got[0].to_f32(), w = want[0].to_f32();
  EXPECT_LT(test::max_abs_diff(v.data(), w.data(), w.size()), 1e-6);
  EXPECT_NE(got[1].to_f32()[0], 27.0f);  // the ban held
  EXPECT_EQ(op_counts(*fusing_engine(graph_with(true), false))["log_softmax_topk"], 0);
}

// In fp16, an f32 residual reaches the layer through a cast that the lowering placed after the
// layer; fusing the add gives the layer that cast's output, so the rewrite must restore the
// order (a later rewrite inferring shapes in node order saw the residual's shape as []).
TEST(Rewrites, AResidualFusedInFp16KeepsTheNodesInOrder) {
  ModelDefinition def;
  GraphBuilder b(def);
  const int x = b.input("x", DType::F32, {{3, ""}, {16, ""}});
  const int r = b.input("r", DType::F32, {{3, ""}, {50, ""}});
  Tensor w({50, 16}), bias({50});
  for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = static_cast<float>((i * 13) % 17) * 0.05f - 0.4f;
  for (size_t i = 0; i < bias.data.size(); ++i) bias.data[i] = static_cast<float>(i % 5) * 0.1f;
  const int y = b.linear(x, "proj", w, bias);
  const int scores = b.op("log_softmax", "log_probs", {b.op("add", "residual", {y, r})});
  const auto best = b.graph().add_node("topk", "best", {scores}, {{"k", int64_t{4}}});
  b.output("scores", best[0]);
  b.output("tokens", best[1]);
  def.validate();
  std::vector<float> xs(48), rs(150);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 7) % 11) * 0.2f - 1.0f;
  for (size_t i = 0; i < rs.size(); ++i) rs[i] = static_cast<float>((i * 29) % 50) * 0.125f;
  const std::vector<HostTensor> in = {HostTensor::from_f32("x", {3, 16}, xs), HostTensor::from_f32("r", {3, 50}, rs)};
  Engine reference(def.graph(), def.constants(), EngineOptions{"cpu"});
  auto fused = fusing_engine(def, true);
  auto ops = op_counts(*fused);
  EXPECT_EQ(ops["add"], 0);
  EXPECT_EQ(ops["log_softmax_topk"], 1);
  const auto want = reference.run(in), got = fused->run(in);
  const auto v = got[0].to_f32(), u = want[0].to_f32();
  EXPECT_LT(test::max_abs_diff(v.data(), u.data(), u.size()), 0.05);
}

// What the fused node cannot stand for stays as it was: the smallest k, another axis, and a
// reader between the two (a beam search adding its running scores; the reader is checked as a
// topk before any of its attributes is read).
TEST(Rewrites, LogSoftmaxFusesOnlyIntoALastAxisLargestTopk) {
  auto fused_nodes = [](const std::function<int(GraphBuilder&, int)>& after) {
    ModelDefinition def;
    GraphBuilder b(def);
    const int x = b.input("x", DType::F32, {{3, ""}, {50, ""}});
    const int y = after(b, b.op("log_softmax", "log_probs", {x}));
    b.output("y", y);
    def.validate();
    return op_counts(*fusing_engine(def, false))["log_softmax_topk"];
  };
  auto topk = [](GraphBuilder& b, int v, int64_t axis, int64_t largest) {
    return b.graph().add_node("topk", "best", {v}, {{"k", int64_t{2}}, {"axis", axis}, {"largest", largest}})[1];
  };
  EXPECT_EQ(fused_nodes([&](GraphBuilder& b, int v) { return topk(b, v, 1, 1); }), 1);
  EXPECT_EQ(fused_nodes([&](GraphBuilder& b, int v) { return topk(b, v, -1, 0); }), 0);
  EXPECT_EQ(fused_nodes([&](GraphBuilder& b, int v) { return topk(b, v, 0, 1); }), 0);
  EXPECT_EQ(fused_nodes([&](GraphBuilder& b, int v) { return topk(b, b.op("add", "plus", {v, v}), -1, 1); }), 0);
}

TEST(Rewrites, TheB0CheckpointRewrittenComputesTheSame) {
  Checkpoint ckpt(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"));
  const ModelDefinition def = FamilyRegistry::instance().find_family("efficientnet_b0")->build(ckpt);
  SafetensorsFile ref(test::data_path("reference/efficientnet_b0_timm_reference.safetensors"));
  const Tensor in = ref.to_float("inputs");
  const std::vector<float> want = test::logits(*test::engine(def, "cpu"), in);
  auto fused = fusing_engine(def, false);
  auto ops = op_counts(*fused);
  EXPECT_EQ(ops["mlp"], 16);  // every squeeze-excite
  EXPECT_EQ(ops["mul"], 0);
  EXPECT_EQ(ops["add"], 0);
  const std::vector<float> got = test::logits(*fused, in);
  EXPECT_LT(test::max_abs_diff(got.data(), want.data(), want.size()), 1e-3);
  for (int n = 0; n < 8; ++n)
    EXPECT_EQ(test::top_indices(got.data() + n * 1000, 1000, 1), test::top_indices(want.data() + n * 1000, 1000, 1));
}

}  // namespace
}  // namespace kiln
