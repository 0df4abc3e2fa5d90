// The BART family: Hugging Face BartForConditionalGeneration checkpoints (summarization such as
// bart-large-cnn): a post-norm transformer encoder-decoder with learned positions (offset by
// 2: rows 0 and 1 of the stored table are never used), a layer norm after the embeddings, GELU,
// final_logits_bias, embeddings shared by encoder, decoder and output. Its tokenizer is
// byte-level BPE (vocab.json + merges.txt).
#include <cmath>
#include <filesystem>
#include <sstream>

#include "checkpoints/seq2seq_checkpoint.h"
#include "core/error.h"
#include "core/read_file.h"
#include "graph/encoder_decoder.h"
#include "graph/family_registry.h"

namespace kiln::bart {

namespace {

namespace fs = std::filesystem;

// BartLearnedPositionalEmbedding reads row position + 2.
constexpr int64_t kPositionOffset = 2;

NamedTensor positions(Checkpoint& ckpt, const std::string& side, const EncoderDecoderConfig& c) {
  const std::string name = "model." + side + ".embed_positions.weight";
  const int64_t count = c.source_capacity;
  Tensor stored = load_checked(ckpt, name, {count + kPositionOffset, c.d_model}, "bart");
  Tensor t({count, c.d_model});
  std::copy(stored.data.begin() + kPositionOffset * c.d_model, stored.data.end(), t.data.begin());
  return {name + ".from_2", std::move(t)};
}

std::vector<std::string> merges(const fs::path& path) {
  std::istringstream in(read_file(path.string(), kMaxSmallFileBytes));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

nlohmann::json tokenizer_config(const fs::path& dir, int64_t vocab_size) {
  for (const char* f : {"vocab.json", "merges.txt"})
    KILN_CHECK(fs::exists(dir / f), "[bart] {} has no {} (the tokenizer)", dir.string(), f);
  const nlohmann::json vocab = read_json_file((dir / "vocab.json").string(), "bart");
  KILN_CHECK(vocab.is_object(), "[bart] vocab.json is not an object");
  const auto id = [&](const char* token) {
    KILN_CHECK(vocab.contains(token) && vocab[token].is_number_integer(), "[bart] vocab.json has no '{}'", token);
    const int64_t i = vocab[token].get<int64_t>();
    KILN_CHECK(i >= 0 && i < vocab_size, "[bart] '{}' has id {}, outside the vocabulary", token, i);
    return i;
  };
  bool prefix_space = false;
  if (fs::exists(dir / "tokenizer_config.json")) {
    const auto tc = read_json_file((dir / "tokenizer_config.json").string(), "bart");
    prefix_space = tc.is_object() && tc.value("add_prefix_space", false) == true;
  }
  const std::vector<std::string> specials = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  std::vector<int64_t> special_ids;
  for (const auto& s : specials) special_ids.push_back(id(s.c_str()));
  return {{"type", "byte_bpe"},
          {"vocab", vocab},
          {"merges", merges(dir / "merges.txt")},
          {"added", specials},
          {"add_prefix_space", prefix_space},
          {"bos", id("<s>")},
          {"eos", id("</s>")},
          {"special_ids", special_ids}};
}

class Bart : public Family {
 public:
  ModelDefinition build(Checkpoint& ckpt) const override {
    const auto& cfg = ckpt.config();
    reject_config(cfg, "normalize_before", false, "pre-norm layers", "bart");
    reject_config(cfg, "add_final_layer_norm", false, "a final layer norm", "bart");
    reject_config(cfg, "normalize_embedding", true, "no embedding layer norm", "bart");
    reject_config(cfg, "static_position_embeddings", false, "sinusoidal positions", "bart");
    reject_config(cfg, "add_bias_logits", false, "a logits bias layer", "bart");
    EncoderDecoderConfig c = read_encoder_decoder_config(cfg, "bart");
    if (cfg.value("scale_embedding", false) == true) c.embed_scale = std::sqrt(static_cast<float>(c.d_model));
    c.embedding_norm = true;

    EncoderDecoderWeights w = read_encoder_decoder_embeddings(ckpt, c, "bart");
    w.encoder_positions = positions(ckpt, "encoder", c);
    w.decoder_positions = positions(ckpt, "decoder", c);
    ModelDefinition def;
    def.family = name();
    def.architecture = "BartForConditionalGeneration";
    def.task = "summarization";
    build_encoder_decoder(def, c, w);
    require_all_used(ckpt, "bart");

    def.task_config = encoder_decoder_task_config(ckpt, c, tokenizer_config(ckpt.dir(), c.vocab), "bart");
    return def;
  }
};

}  // namespace

}  // namespace kiln::bart

namespace kiln {
KILN_FAMILY(bart) { return std::make_unique<bart::Bart>(); }
}  // namespace kiln
