#include "checkpoints/seq2seq_checkpoint.h"

#include <filesystem>

#include "core/error.h"
#include "core/json_int.h"
#include "tasks/text/generation_config.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

int64_t config_int(const nlohmann::json& c, const char* key, int64_t lo, int64_t hi, const std::string& who) {
  KILN_CHECK(c.contains(key), "[{}] config.json has no '{}'", who, key);
  return json_int(c[key], lo, hi, "[" + who + "] config " + key);
}

Activation activation_of(const nlohmann::json& c, const std::string& who) {
  const auto it = c.find("activation_function");
  const std::string name = it != c.end() && it->is_string() ? it->get<std::string>() : "gelu";
  if (name == "swish" || name == "silu") return Activation::SiLU;
  if (name == "gelu") return Activation::Gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::GeluTanh;
  if (name == "relu") return Activation::ReLU;
  if (name == "tanh") return Activation::Tanh;
  fail("[{}] activation_function '{}' is not supported (swish, silu, gelu, gelu_new, relu, tanh)", who, name);
}

}  // namespace

EncoderDecoderConfig read_encoder_decoder_config(const nlohmann::json& cfg, const std::string& who) {
  EncoderDecoderConfig c;
  c.d_model = config_int(cfg, "d_model", 1, 1 << 16, who);
  c.vocab = config_int(cfg, "vocab_size", 1, 1 << 24, who);
  c.encoder_layers = static_cast<int>(config_int(cfg, "encoder_layers", 1, 1024, who));
  c.decoder_layers = static_cast<int>(config_int(cfg, "decoder_layers", 1, 1024, who));
  c.encoder_heads = static_cast<int>(config_int(cfg, "encoder_attention_heads", 1, 1024, who));
  c.decoder_heads = static_cast<int>(config_int(cfg, "decoder_attention_heads", 1, 1024, who));
  c.encoder_ffn = config_int(cfg, "encoder_ffn_dim", 1, 1 << 20, who);
  c.decoder_ffn = config_int(cfg, "decoder_ffn_dim", 1, 1 << 20, who);
  c.source_capacity = c.target_capacity = config_int(cfg, "max_position_embeddings", 2, 1 << 16, who);
  KILN_CHECK(c.d_model % c.encoder_heads == 0 && c.d_model % c.decoder_heads == 0,
             "[{}] d_model {} is not a multiple of the attention heads ({}, {})", who, c.d_model, c.encoder_heads,
             c.decoder_heads);
  c.act = activation_of(cfg, who);
  return c;
}

Tensor load_checked(Checkpoint& ckpt, const std::string& name, const Shape& shape, const std::string& who) {
  KILN_CHECK(ckpt.has(name), "[{}] checkpoint {} is missing tensor '{}'", who, ckpt.dir(), name);
  const auto actual = ckpt.shape(name);
  KILN_CHECK(actual == shape, "[{}] tensor '{}' has shape {}, the config needs {}", who, name, shape_string(actual),
             shape_string(shape));
  return ckpt.load(name);
}

EncoderDecoderWeights read_encoder_decoder_embeddings(Checkpoint& ckpt, const EncoderDecoderConfig& c,
                                                      const std::string& who) {
  const Shape table = {c.vocab, c.d_model};
  const bool tied = ckpt.config().value("tie_word_embeddings", true) == true;
  // The first stored name holds the shared table; the others are copies of it.
  std::string shared;
  for (const char* name :
       {"model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"})
    if (shared.empty() && ckpt.has(name)) shared = name;
  KILN_CHECK(!shared.empty(), "[{}] checkpoint {} has no token embeddings (model.shared.weight)", who, ckpt.dir());
  EncoderDecoderWeights w;
  const Tensor embed = load_checked(ckpt, shared, table, who);
  for (const char* copy : {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"})
    if (ckpt.has(copy) && copy != shared) {
      KILN_CHECK(ckpt.shape(copy) == table, "[{}] tensor '{}' has shape {}, the config needs {}", who, copy,
                 shape_string(ckpt.shape(copy)), shape_string(table));
      ckpt.ignore(copy);
    }
  w.encoder_embed = w.decoder_embed = {"model.shared.weight", embed};
  if (tied) {
    if (ckpt.has("lm_head.weight")) ckpt.ignore("lm_head.weight");
    w.lm_head = w.encoder_embed;
  } else {
    w.lm_head = {"lm_head.weight", load_checked(ckpt, "lm_head.weight", table, who)};
  }
  if (ckpt.has("final_logits_bias")) {
    Tensor bias = load_checked(ckpt, "final_logits_bias", {1, c.vocab}, who);
    bias.shape = {c.vocab};
    w.logits_bias = {"final_logits_bias", std::move(bias)};
  }
  w.load = [&ckpt, who](const std::string& name, const Shape& shape) { return load_checked(ckpt, name, shape, who); };
  return w;
}

void reject_config(const nlohmann::json& cfg, const char* key, const nlohmann::json& supported, const char* what,
                   const std::string& who) {
  const auto it = cfg.find(key);
  KILN_CHECK(it == cfg.end() || it->is_null() || *it == supported, "[{}] config {} = {} ({}) is not supported", who,
             key, it->dump(), what);
}

nlohmann::json encoder_decoder_task_config(const Checkpoint& ckpt, const EncoderDecoderConfig& c,
                                           nlohmann::json tokenizer, const std::string& who) {
  const fs::path generation_file = fs::path(ckpt.dir()) / "generation_config.json";
  const nlohmann::json generation =
      fs::exists(generation_file) ? read_json_file(generation_file.string(), who.c_str()) : nlohmann::json::object();
  return {{"graph", "encoder"},
          {"tokenizer", std::move(tokenizer)},
          {"generation", GenerationConfig::from_hf(ckpt.config(), generation, c.vocab).to_json()},
          {"vocab_size", c.vocab},
          {"source_capacity", c.source_capacity},
          {"target_capacity", c.target_capacity}};
}

void require_all_used(const Checkpoint& ckpt, const std::string& who) {
  const auto unused = ckpt.unused();
  KILN_CHECK(unused.empty(), "[{}] checkpoint has {} tensor(s) the architecture does not use, e.g. '{}'", who,
             unused.size(), unused.empty() ? "" : unused.front());
}

}  // namespace kiln
