#include "graph/encoder_decoder.h"

#include "core/error.h"
#include "graph/builder.h"

namespace kiln {

namespace {

// The most sources of an encoder batch, source slots, and decoder rows (slots times beams).
constexpr int64_t kMaxRows = 8192;

class Layers {
 public:
  Layers(GraphBuilder& b, const EncoderDecoderConfig& c, const EncoderDecoderWeights& w) : b_(b), c_(c), w_(w) {}

  Tensor load(const std::string& name, const Shape& shape) const { return w_.load(name, shape); }

  int layer_norm(int x, const std::string& name) {
    return b_.layer_norm(x, name, load(name + ".weight", {c_.d_model}), load(name + ".bias", {c_.d_model}), c_.eps);
  }

  AttentionWeights attention_weights(const std::string& name) const {
    const int64_t d = c_.d_model;
    auto w = [&](const char* proj) { return load(name + "." + proj + ".weight", {d, d}); };
    auto bias = [&](const char* proj) { return load(name + "." + proj + ".bias", {d}); };
    return {w("q_proj"), bias("q_proj"), w("k_proj"),   bias("k_proj"),
            w("v_proj"), bias("v_proj"), w("out_proj"), bias("out_proj")};
  }

  int feed_forward(int x, const std::string& name, int64_t ffn, int residual) {
    const int64_t d = c_.d_model;
    return b_.feed_forward(x, name, load(name + ".fc1.weight", {ffn, d}), load(name + ".fc1.bias", {ffn}),
                           load(name + ".fc2.weight", {d, ffn}), load(name + ".fc2.bias", {d}), c_.act, residual);
  }

  // A block y = x + f(x) with its layer norm after the sum (post-norm) or on f's input (pre-norm).
  template <typename F>
  int block(int x, const std::string& norm, F&& f) {
    if (c_.pre_norm) return f(layer_norm(x, norm), x);
    return layer_norm(f(x, x), norm);
  }

  // Token embeddings (scaled) plus positions, then the optional embedding norm.
  int embed(int ids, int positions, const NamedTensor& table, const NamedTensor& position_table,
            const std::string& prefix) {
    int x = b_.op("gather", prefix + ".embed_tokens", {b_.weight(table.name, table.tensor), ids});
    if (c_.embed_scale != 1.0f) {
      Tensor scale({1});
      scale.data[0] = c_.embed_scale;
      x = b_.op("mul", prefix + ".embed_scale", {x, b_.weight(prefix + ".embed_scale", scale)});
    }
    const int p = b_.op("gather", prefix + ".embed_positions",
                        {b_.weight(position_table.name, position_table.tensor), positions});
    x = b_.op("add", prefix + ".embed", {x, p});
    return c_.embedding_norm ? layer_norm(x, prefix + ".layernorm_embedding") : x;
  }

  int head_dim(int heads) const {
    KILN_CHECK(heads > 0 && c_.d_model % heads == 0, "[build] {} attention heads do not divide d_model {}", heads,
               c_.d_model);
    return static_cast<int>(c_.d_model / heads);
  }

 private:
  GraphBuilder& b_;
  const EncoderDecoderConfig& c_;
  const EncoderDecoderWeights& w_;
};

// A cache [rows or slots, heads, capacity, head dim]; each size is a symbol that a run binds
// through an input of that length (slots, slot_capacity, memory_capacity, cross_rows,
// cache_capacity), so that a generation call sizes its caches for its own sources, longest
// source and longest output.
ShapeSpec cache_shape(const char* rows, int heads, const char* capacity, int head_dim) {
  return {{0, rows}, {heads, ""}, {0, capacity}, {head_dim, ""}};
}

// The symbols of the cross-attention caches' sizes: source slots and source positions.
void set_cross_symbols(Graph& g, const EncoderDecoderConfig& c) {
  g.set_symbol("slots", {1, kMaxRows});
  g.set_symbol("memory", {8, c.source_capacity});
}

void build_encoder(ModelDefinition& def, const EncoderDecoderConfig& c, const EncoderDecoderWeights& w) {
  GraphBuilder b(def, "encoder");
  Graph& g = b.graph();
  g.set_symbol("batch", {1, kMaxRows});
  g.set_symbol("source", {4, c.source_capacity});
  set_cross_symbols(g, c);
  const int ids = b.input("ids", DType::I64, {{0, "batch"}, {0, "source"}});
  const int positions = b.input("positions", DType::I64, {{0, "source"}});
  const int length = b.input("length", DType::I64, {{0, "batch"}});
  const int slots = b.input("slots", DType::I64, {{0, "slots"}});
  b.input("memory_capacity", DType::I64, {{0, "memory"}});
  Layers L(b, c, w);
  int x = L.embed(ids, positions, w.encoder_embed, w.encoder_positions, "model.encoder");
  for (int l = 0; l < c.encoder_layers; ++l) {
    const std::string name = "model.encoder.layers." + std::to_string(l);
    x = L.block(x, name + ".self_attn_layer_norm", [&](int h, int residual) {
      return b.self_attention(h, name + ".self_attn", L.attention_weights(name + ".self_attn"), c.encoder_heads, -1,
                              false, residual, "attention", length);
    });
    x = L.block(x, name + ".final_layer_norm",
                [&](int h, int residual) { return L.feed_forward(h, name, c.encoder_ffn, residual); });
  }
  if (c.pre_norm) x = L.layer_norm(x, "model.encoder.layer_norm");
  b.output("hidden", x);
  // Each decoder layer's cross-attention keys and values of the encoder's output (one stacked
  // projection a layer), into the sources' slots (their beams read them there).
  const int dh = L.head_dim(c.decoder_heads);
  for (int l = 0; l < c.decoder_layers; ++l) {
    const std::string name = "model.decoder.layers." + std::to_string(l) + ".encoder_attn";
    const int64_t d = c.d_model;
    const auto kv = b.stacked_linear(
        x, name + ".kv_proj", {L.load(name + ".k_proj.weight", {d, d}), L.load(name + ".v_proj.weight", {d, d})},
        {L.load(name + ".k_proj.bias", {d}), L.load(name + ".v_proj.bias", {d})}, "attention");
    for (int part = 0; part < 2; ++part) {
      const std::string kv_name = part == 0 ? "k" : "v";
      const int heads = b.split_heads(kv[part], name + "." + kv_name, c.decoder_heads, dh, "attention");
      const int state = g.add_state("cross_" + kv_name + "." + std::to_string(l), DType::F32,
                                    cache_shape("slots", c.decoder_heads, "memory", dh));
      b.op("write_rows", name + "." + kv_name + "_rows", {state, heads, slots}, {}, "attention");
    }
  }
}

// The decoder step; with top_k, its outputs are each row's best tokens after bans rather than
// the logits.
void build_decoder_step(ModelDefinition& def, const EncoderDecoderConfig& c, const EncoderDecoderWeights& w,
                        bool top_k) {
  GraphBuilder b(def, top_k ? "decoder_topk" : "decoder_step");
  Graph& g = b.graph();
  g.set_symbol("rows", {1, kMaxRows});
  g.set_symbol("cache", {8, c.target_capacity});
  set_cross_symbols(g, c);
  if (top_k) g.set_symbol("banned", {1, 1 << 16});
  const int ids = b.input("ids", DType::I64, {{0, "rows"}, {1, ""}});
  const int position = b.input("position", DType::I64, {{0, "rows"}});
  const int length = b.input("length", DType::I64, {{0, "rows"}});
  const int source_length = b.input("source_length", DType::I64, {{0, "rows"}});
  const int banned = top_k ? b.input("banned", DType::I64, {{0, "rows"}, {0, "banned"}}) : -1;
  b.input("slot_capacity", DType::I64, {{0, "slots"}});
  b.input("cache_capacity", DType::I64, {{0, "cache"}});
  const int cache_rows = b.input("cache_rows", DType::I32, {{0, "rows"}, {0, "cache"}});
  const int cross_rows = b.input("cross_rows", DType::I32, {{0, "rows"}, {0, "memory"}});
  Layers L(b, c, w);
  const int step_position =
      b.op("reshape", "model.decoder.step_position", {position}, {{"shape", std::vector<int64_t>{-1, 1}}});
  int x = L.embed(ids, step_position, w.decoder_embed, w.decoder_positions, "model.decoder");
  const int dh = L.head_dim(c.decoder_heads);
  const ShapeSpec self_shape = cache_shape("rows", c.decoder_heads, "cache", dh);
  const ShapeSpec cross_shape = cache_shape("slots", c.decoder_heads, "memory", dh);
  for (int l = 0; l < c.decoder_layers; ++l) {
    const std::string name = "model.decoder.layers." + std::to_string(l), layer = std::to_string(l);
    KvCache cache{g.add_state("k." + layer, DType::F32, self_shape), g.add_state("v." + layer, DType::F32, self_shape),
                  position, length, cache_rows};
    x = L.block(x, name + ".self_attn_layer_norm", [&](int h, int residual) {
      return b.cached_self_attention(h, name + ".self_attn", L.attention_weights(name + ".self_attn"), c.decoder_heads,
                                     cache, residual);
    });
    x = L.block(x, name + ".encoder_attn_layer_norm", [&](int h, int residual) {
      // Queries of this step over the source's keys and values computed by the encoder graph.
      const std::string attn = name + ".encoder_attn";
      const int64_t d = c.d_model;
      const int q = b.split_heads(b.linear(h, attn + ".q_proj", L.load(attn + ".q_proj.weight", {d, d}),
                                           L.load(attn + ".q_proj.bias", {d}), Activation::None, "attention"),
                                  attn + ".q", c.decoder_heads, dh, "attention");
      const int k = g.add_state("cross_k." + layer, DType::F32, cross_shape);
      const int v = g.add_state("cross_v." + layer, DType::F32, cross_shape);
      const int a = b.op("attention", attn + ".sdpa", {q, k, v, -1, source_length, cross_rows}, {}, "attention");
      return b.linear(b.merge_heads(a, attn, "attention"), attn + ".out_proj",
                      L.load(attn + ".out_proj.weight", {d, d}), L.load(attn + ".out_proj.bias", {d}), Activation::None,
                      "attention", residual);
    });
    x = L.block(x, name + ".final_layer_norm",
                [&](int h, int residual) { return L.feed_forward(h, name, c.decoder_ffn, residual); });
  }
  if (c.pre_norm) x = L.layer_norm(x, "model.decoder.layer_norm");
  // final_logits_bias is the output projection's bias: added in its epilogue, not by a pass of
  // its own over [rows, vocab] (58 us of a 1 ms beam step at 128 rows on an H200).
  const int logits = b.linear(x, w.lm_head.name, w.lm_head.tensor, w.logits_bias.tensor, Activation::None, "lm_head");
  const int y = b.op("reshape", "lm_head.rows", {logits}, {{"shape", std::vector<int64_t>{0, -1}}}, "lm_head");
  if (!top_k) {
    b.output("logits", y);
    return;
  }
  const int scores = b.op("log_softmax", "log_probs", {y, banned}, {}, "lm_head");
  const auto best = g.add_node("topk", "best", {scores}, {{"k", std::min(kEncoderDecoderTopK, c.vocab)}}, "lm_head");
  b.output("scores", best[0]);
  b.output("tokens", best[1]);
}

}  // namespace

void build_encoder_decoder(ModelDefinition& def, const EncoderDecoderConfig& c, const EncoderDecoderWeights& w) {
  KILN_CHECK(c.d_model > 0 && c.vocab > 0 && c.encoder_layers > 0 && c.decoder_layers > 0,
             "[build] encoder-decoder: d_model, vocab and the layer counts must be positive");
  KILN_CHECK(c.source_capacity > 0 && c.target_capacity > 1, "[build] encoder-decoder: capacities must be positive");
  const auto check = [&](const NamedTensor& t, const Shape& shape, const char* what) {
    KILN_CHECK(t.tensor.shape == shape, "[build] {} '{}' is {}, the config needs {}", what, t.name,
               shape_string(t.tensor.shape), shape_string(shape));
  };
  check(w.encoder_embed, {c.vocab, c.d_model}, "encoder embedding");
  check(w.decoder_embed, {c.vocab, c.d_model}, "decoder embedding");
  check(w.lm_head, {c.vocab, c.d_model}, "output projection");
  if (!w.logits_bias.tensor.shape.empty()) check(w.logits_bias, {c.vocab}, "logits bias");
  KILN_CHECK(w.encoder_positions.tensor.shape.size() == 2 && w.encoder_positions.tensor.dim(0) >= c.source_capacity &&
                 w.encoder_positions.tensor.dim(1) == c.d_model,
             "[build] encoder positions {} do not cover {} positions of width {}",
             shape_string(w.encoder_positions.tensor.shape), c.source_capacity, c.d_model);
  KILN_CHECK(w.decoder_positions.tensor.shape.size() == 2 && w.decoder_positions.tensor.dim(0) >= c.target_capacity &&
                 w.decoder_positions.tensor.dim(1) == c.d_model,
             "[build] decoder positions {} do not cover {} positions of width {}",
             shape_string(w.decoder_positions.tensor.shape), c.target_capacity, c.d_model);
  build_encoder(def, c, w);
  build_decoder_step(def, c, w, false);
  build_decoder_step(def, c, w, true);
}

}  // namespace kiln
