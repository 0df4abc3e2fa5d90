// A tiny transformer built through the graph API, for the engine's tests: an encoder (token and
// position embeddings, self-attention with a padding mask, feed-forward, layer norms; 2 layers)
// and a decoder in two forms over the same weights: the whole sequence at once with causal
// attention, and one step at a time with a KV cache kept in graph states.
#pragma once

#include <cmath>
#include <random>
#include <string>

#include "graph/builder.h"
#include "graph/model_definition.h"

namespace kiln::test {

struct TinyTransformer {
  int vocab = 50, d = 32, heads = 4, ffn = 64, layers = 2, capacity = 256;
};

// Graphs "encoder" (ids [batch, seq] i64, positions [seq] i64, mask [batch, seq] f32 additive
// -> hidden [batch, seq, d]), "decoder" (ids, positions -> logits [batch, seq, vocab], causal)
// and "decoder_step" (ids [batch, 1], position [1], length [batch] -> logits [batch, 1, vocab];
// states k.<l> and v.<l> [batch, heads, capacity, d / heads]).
inline ModelDefinition tiny_transformer(const TinyTransformer& t = {}, uint32_t seed = 1) {
  ModelDefinition def;
  def.family = "test";
  def.architecture = "tiny_transformer";
  def.task = "test";
  def.task_config = {{"graph", "encoder"}};
  std::mt19937 rng(seed);
  // The same name gives the same tensor in every graph (GraphBuilder::weight keeps the first).
  auto random = [&](std::vector<int64_t> shape, float scale) {
    std::normal_distribution<float> dist(0.0f, scale);
    Tensor w(std::move(shape));
    for (auto& v : w.data) v = dist(rng);
    return w;
  };
  const float sd = 1.0f / std::sqrt(static_cast<float>(t.d));
  auto proj = [&](int out, int in) { return random({out, in}, 1.0f / std::sqrt(static_cast<float>(in))); };
  auto attention_weights = [&] {
    return AttentionWeights{proj(t.d, t.d), random({t.d}, 0.1f), proj(t.d, t.d), random({t.d}, 0.1f),
                            proj(t.d, t.d), random({t.d}, 0.1f), proj(t.d, t.d), random({t.d}, 0.1f)};
  };
  auto ones_ish = [&](int n) {
    Tensor g = random({n}, 0.1f);
    for (auto& v : g.data) v += 1.0f;
    return g;
  };
  // Weights are drawn in one fixed order, whichever graph uses them first.
  const Tensor embed = random({t.vocab, t.d}, 1.0f), positions = random({t.capacity, t.d}, 0.5f);
  struct Layer {
    AttentionWeights self;
    Tensor ln1_g, ln1_b, fc1_w, fc1_b, fc2_w, fc2_b, ln2_g, ln2_b;
  };
  auto layer_weights = [&] {
    return Layer{attention_weights(), ones_ish(t.d),         random({t.d}, 0.1f),
                 proj(t.ffn, t.d),    random({t.ffn}, 0.1f), proj(t.d, t.ffn),
                 random({t.d}, 0.1f), ones_ish(t.d),         random({t.d}, 0.1f)};
  };
  std::vector<Layer> encoder_layers, decoder_layers;
  for (int l = 0; l < t.layers; ++l) encoder_layers.push_back(layer_weights());
  for (int l = 0; l < t.layers; ++l) decoder_layers.push_back(layer_weights());
  const Tensor lm_head = random({t.vocab, t.d}, sd);

  auto layer = [&](GraphBuilder& b, int x, const std::string& name, Layer w, int mask, bool causal,
                   const KvCache* cache) {
    const int a = cache ? b.cached_self_attention(x, name + ".self_attn", w.self, t.heads, *cache, x)
                        : b.self_attention(x, name + ".self_attn", w.self, t.heads, mask, causal, x);
    const int n1 = b.layer_norm(a, name + ".self_attn_layer_norm", w.ln1_g, w.ln1_b, 1e-5);
    const int f = b.feed_forward(n1, name, w.fc1_w, w.fc1_b, w.fc2_w, w.fc2_b, Activation::Gelu, n1);
    return b.layer_norm(f, name + ".final_layer_norm", w.ln2_g, w.ln2_b, 1e-5);
  };
  auto embeddings = [&](GraphBuilder& b, int ids, int pos) {
    const int tok = b.op("gather", "embed_tokens", {b.weight("embed_tokens.weight", embed), ids});
    const int p = b.op("gather", "embed_positions", {b.weight("embed_positions.weight", positions), pos});
    return b.op("add", "embed", {tok, p});
  };
  {
    GraphBuilder b(def, "encoder");
    b.graph().set_symbol("seq", {4, t.capacity});
    const int ids = b.input("ids", DType::I64, {{0, "batch"}, {0, "seq"}});
    const int pos = b.input("positions", DType::I64, {{0, "seq"}});
    const int mask = b.input("mask", DType::F32, {{0, "batch"}, {0, "seq"}});
    const int mask4 = b.op("reshape", "mask_4d", {mask}, {{"shape", std::vector<int64_t>{0, 1, 1, -1}}});
    int x = embeddings(b, ids, pos);
    for (int l = 0; l < t.layers; ++l)
      x = layer(b, x, "encoder.layers." + std::to_string(l), encoder_layers[l], mask4, false, nullptr);
    b.output("hidden", x);
  }
  {
    GraphBuilder b(def, "decoder");
    b.graph().set_symbol("seq", {4, t.capacity});
    const int ids = b.input("ids", DType::I64, {{0, "batch"}, {0, "seq"}});
    const int pos = b.input("positions", DType::I64, {{0, "seq"}});
    int x = embeddings(b, ids, pos);
    for (int l = 0; l < t.layers; ++l)
      x = layer(b, x, "decoder.layers." + std::to_string(l), decoder_layers[l], -1, true, nullptr);
    b.output("logits", b.linear(x, "lm_head", lm_head, Tensor{}));
  }
  {
    GraphBuilder b(def, "decoder_step");
    const int ids = b.input("ids", DType::I64, {{0, "batch"}, {1, ""}});
    KvCache cache;
    cache.position = b.input("position", DType::I64, {{1, ""}});
    cache.length = b.input("length", DType::I64, {{0, "batch"}});
    int x = embeddings(b, ids, cache.position);
    const ShapeSpec state_shape = {{0, "batch"}, {t.heads, ""}, {t.capacity, ""}, {t.d / t.heads, ""}};
    for (int l = 0; l < t.layers; ++l) {
      cache.k_state = b.graph().add_state("k." + std::to_string(l), DType::F32, state_shape);
      cache.v_state = b.graph().add_state("v." + std::to_string(l), DType::F32, state_shape);
      x = layer(b, x, "decoder.layers." + std::to_string(l), decoder_layers[l], -1, false, &cache);
    }
    b.output("logits", b.linear(x, "lm_head", lm_head, Tensor{}));
  }
  def.validate();
  return def;
}

}  // namespace kiln::test
