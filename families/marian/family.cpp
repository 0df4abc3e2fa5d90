// The Marian family: Hugging Face MarianMTModel checkpoints (OPUS-MT translation models):
// a post-norm transformer encoder-decoder with embeddings scaled by sqrt(d_model), sinusoidal
// positions (computed here; older Hub files store them, and those are used), a SiLU or GELU
// feed-forward, final_logits_bias, embeddings shared by encoder, decoder and output. Its
// tokenizer is a SentencePiece model per language plus a joint vocab.json.
#include <cmath>
#include <filesystem>

#include "checkpoints/seq2seq_checkpoint.h"
#include "core/base64.h"
#include "core/error.h"
#include "core/read_file.h"
#include "graph/encoder_decoder.h"
#include "graph/family_registry.h"

namespace kiln::marian {

namespace {

namespace fs = std::filesystem;

// MarianSinusoidalPositionalEmbedding: row p holds sin(p / 10000^(2j/d)) in column j and
// cos of the same angle in column d/2 + j (computed in double, stored as float, as there).
Tensor sinusoidal_positions(int64_t count, int64_t d) {
  Tensor t({count, d});
  const int64_t half = d / 2 + d % 2;
  for (int64_t p = 0; p < count; ++p)
    for (int64_t j = 0; j < d; ++j) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / d);
      if (j % 2 == 0)
        t.data[p * d + j / 2] = static_cast<float>(std::sin(angle));
      else
        t.data[p * d + half + j / 2] = static_cast<float>(std::cos(angle));
    }
  return t;
}

NamedTensor positions(Checkpoint& ckpt, const std::string& side, const EncoderDecoderConfig& c) {
  const std::string name = "model." + side + ".embed_positions.weight";
  const int64_t count = std::max(c.source_capacity, c.target_capacity);
  if (ckpt.has(name)) return {name, load_checked(ckpt, name, {count, c.d_model}, "marian")};
  return {"model.sinusoidal_positions", sinusoidal_positions(count, c.d_model)};
}

nlohmann::json tokenizer_config(const fs::path& dir, const nlohmann::json& vocab) {
  KILN_CHECK(!fs::exists(dir / "target_vocab.json"),
             "[marian] {} has a separate target vocabulary (target_vocab.json), which is not supported", dir.string());
  for (const char* f : {"source.spm", "target.spm", "vocab.json"})
    KILN_CHECK(fs::exists(dir / f), "[marian] {} has no {} (the tokenizer)", dir.string(), f);
  const auto id = [&](const char* token) {
    KILN_CHECK(vocab.contains(token) && vocab[token].is_number_integer(), "[marian] vocab.json has no '{}'", token);
    return vocab[token].get<int64_t>();
  };
  return {{"type", "sentencepiece"},
          {"source_model", base64_encode(read_file((dir / "source.spm").string(), kMaxSmallFileBytes))},
          {"target_model", base64_encode(read_file((dir / "target.spm").string(), kMaxSmallFileBytes))},
          {"vocab", vocab},
          {"eos", id("</s>")},
          {"unk", id("<unk>")},
          {"special_ids", {id("</s>"), id("<unk>"), id("<pad>")}}};
}

class Marian : public Family {
 public:
  ModelDefinition build(Checkpoint& ckpt) const override {
    const auto& cfg = ckpt.config();
    reject_config(cfg, "share_encoder_decoder_embeddings", true, "separate source and target vocabularies", "marian");
    reject_config(cfg, "normalize_before", false, "pre-norm layers", "marian");
    reject_config(cfg, "add_final_layer_norm", false, "a final layer norm", "marian");
    reject_config(cfg, "normalize_embedding", false, "an embedding layer norm", "marian");
    reject_config(cfg, "static_position_embeddings", true, "learned positions", "marian");
    EncoderDecoderConfig c = read_encoder_decoder_config(cfg, "marian");
    if (cfg.value("scale_embedding", false) == true) c.embed_scale = std::sqrt(static_cast<float>(c.d_model));
    if (cfg.contains("decoder_vocab_size") && !cfg["decoder_vocab_size"].is_null())
      KILN_CHECK(cfg["decoder_vocab_size"] == c.vocab, "[marian] decoder_vocab_size differs from vocab_size");

    EncoderDecoderWeights w = read_encoder_decoder_embeddings(ckpt, c, "marian");
    w.encoder_positions = positions(ckpt, "encoder", c);
    w.decoder_positions = positions(ckpt, "decoder", c);
    ModelDefinition def;
    def.family = name();
    def.architecture = "MarianMTModel";
    def.task = "translation";
    build_encoder_decoder(def, c, w);
    require_all_used(ckpt, "marian");

    const fs::path dir = ckpt.dir();
    const nlohmann::json vocab = read_json_file((dir / "vocab.json").string(), "marian");
    KILN_CHECK(vocab.is_object(), "[marian] vocab.json is not an object");
    def.task_config = encoder_decoder_task_config(ckpt, c, tokenizer_config(dir, vocab), "marian");
    return def;
  }
};

}  // namespace

}  // namespace kiln::marian

namespace kiln {
KILN_FAMILY(marian) { return std::make_unique<marian::Marian>(); }
}  // namespace kiln
