#include "tasks/text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "core/base64.h"
#include "core/error.h"
#include "core/json_int.h"

namespace kiln {

namespace {

constexpr int64_t kMaxVocab = 1 << 24;

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_model(const nlohmann::json& config, const char* key) {
  KILN_CHECK(config.contains(key) && config[key].is_string(), "[tokenizer] sentencepiece: '{}' is missing", key);
  const std::string proto = base64_decode(config[key].get_ref<const std::string&>(), std::string("tokenizer ") + key);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->LoadFromSerializedProto(proto);
  KILN_CHECK(status.ok(), "[tokenizer] sentencepiece: {} is not a SentencePiece model: {}", key, status.ToString());
  return sp;
}

class SentencePieceTokenizer : public TextTokenizer {
 public:
  explicit SentencePieceTokenizer(const nlohmann::json& c)
      : source_(load_model(c, "source_model")), target_(load_model(c, "target_model")) {
    KILN_CHECK(c.contains("vocab") && c["vocab"].is_object() && !c["vocab"].empty(),
               "[tokenizer] sentencepiece: 'vocab' must be a non-empty object");
    for (const auto& [piece, id] : c["vocab"].items()) {
      const int64_t i = json_int(id, 0, kMaxVocab - 1, "[tokenizer] vocab id of '" + piece + "'");
      vocab_.emplace(piece, i);
      KILN_CHECK(pieces_.emplace(i, piece).second, "[tokenizer] sentencepiece: two pieces have id {}", i);
    }
    eos_ = json_int(c.value("eos", nlohmann::json()), 0, kMaxVocab - 1, "[tokenizer] eos");
    unk_ = json_int(c.value("unk", nlohmann::json()), 0, kMaxVocab - 1, "[tokenizer] unk");
    for (int64_t id :
         json_ints(c.value("special_ids", nlohmann::json()), 64, 0, kMaxVocab - 1, "[tokenizer] special_ids"))
      special_.insert(id);
  }

  std::vector<int64_t> encode_source(std::string_view text, size_t max_tokens, bool* truncated) const override {
    std::vector<int64_t> ids = encode(*source_, text);
    *truncated = max_tokens >= 1 && ids.size() + 1 > max_tokens;
    if (*truncated) ids.resize(max_tokens - 1);
    ids.push_back(eos_);
    return ids;
  }

  std::vector<int64_t> encode_target(std::string_view text) const override {
    std::vector<int64_t> ids = encode(*target_, text);
    ids.push_back(eos_);
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids) const override {
    std::vector<std::string> pieces;
    for (int64_t id : ids) {
      if (special_.count(id)) continue;
      const auto it = pieces_.find(id);
      if (it != pieces_.end()) {
        pieces.push_back(it->second);
      } else {
        // Ids outside the vocabulary name the SentencePiece model's own pieces.
        KILN_CHECK(id >= 0 && id < source_->GetPieceSize(), "[tokenizer] id {} is outside the vocabulary", id);
        pieces.push_back(source_->IdToPiece(static_cast<int>(id)));
      }
    }
    // Pieces join with the source model (the two share one vocabulary); the word marker
    // U+2581 becomes a space and the ends are trimmed.
    std::string text;
    const auto status = source_->Decode(pieces, &text);
    KILN_CHECK(status.ok(), "[tokenizer] cannot decode: {}", status.ToString());
    std::string out;
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
        out += ' ';
        i += 3;
      } else {
        out += text[i++];
      }
    }
    const size_t begin = out.find_first_not_of(" \t\n\r\f\v"), end = out.find_last_not_of(" \t\n\r\f\v");
    return begin == std::string::npos ? std::string() : out.substr(begin, end - begin + 1);
  }

 private:
  std::vector<int64_t> encode(const sentencepiece::SentencePieceProcessor& sp, std::string_view text) const {
    KILN_CHECK(valid_utf8(text), "[tokenizer] the text is not valid UTF-8");
    std::vector<int64_t> ids;
    // A leading target-language code (">>deu<<") is one token, not pieces.
    if (text.substr(0, 2) == ">>") {
      const size_t end = text.find("<<");
      if (end != std::string_view::npos) {
        ids.push_back(id_of(std::string(text.substr(0, end + 2))));
        text.remove_prefix(end + 2);
      }
    }
    std::vector<std::string> pieces;
    const auto status = sp.Encode(text, &pieces);
    KILN_CHECK(status.ok(), "[tokenizer] cannot encode: {}", status.ToString());
    for (const auto& p : pieces) ids.push_back(id_of(p));
    return ids;
  }

  // Pieces outside the vocabulary (characters the model has never seen) are <unk>.
  int64_t id_of(const std::string& piece) const {
    const auto it = vocab_.find(piece);
    return it != vocab_.end() ? it->second : unk_;
  }

  std::unique_ptr<sentencepiece::SentencePieceProcessor> source_, target_;
  std::unordered_map<std::string, int64_t> vocab_;
  std::map<int64_t, std::string> pieces_;
  std::set<int64_t> special_;
  int64_t eos_ = 0, unk_ = 0;
};

}  // namespace

std::unique_ptr<TextTokenizer> make_sentencepiece_tokenizer(const nlohmann::json& config) {
  return std::make_unique<SentencePieceTokenizer>(config);
}

}  // namespace kiln
