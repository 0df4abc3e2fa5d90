#include "tasks/text/tokenizer.h"

#include <set>

#include "core/error.h"
#include "core/json_int.h"
#include "tasks/text/byte_bpe_tokenizer.h"
#include "tasks/text/sentencepiece_tokenizer.h"

namespace kiln {

namespace {

constexpr int64_t kMaxVocab = 1 << 24;

// Byte-level BPE (GPT-2, RoBERTa): <s> text </s> on both sides.
class ByteBpeTextTokenizer : public TextTokenizer {
 public:
  explicit ByteBpeTextTokenizer(const nlohmann::json& c) : bpe_(make(c)) {
    bos_ = json_int(c.value("bos", nlohmann::json()), 0, kMaxVocab - 1, "[tokenizer] bos");
    eos_ = json_int(c.value("eos", nlohmann::json()), 0, kMaxVocab - 1, "[tokenizer] eos");
    for (int64_t id :
         json_ints(c.value("special_ids", nlohmann::json()), 64, 0, kMaxVocab - 1, "[tokenizer] special_ids"))
      special_.insert(id);
  }

  std::vector<int64_t> encode_source(std::string_view text, size_t max_tokens, bool* truncated) const override {
    std::vector<int64_t> body = bpe_.encode(text);
    *truncated = max_tokens >= 2 && body.size() + 2 > max_tokens;
    if (*truncated) body.resize(max_tokens - 2);
    return wrap(body);
  }
  std::vector<int64_t> encode_target(std::string_view text) const override { return wrap(bpe_.encode(text)); }
  std::string decode(const std::vector<int64_t>& ids) const override { return bpe_.decode(ids, special_); }

 private:
  static ByteBpeTokenizer make(const nlohmann::json& c) {
    KILN_CHECK(c.contains("vocab") && c["vocab"].is_object(), "[tokenizer] byte_bpe: 'vocab' must be an object");
    KILN_CHECK(c.contains("merges") && c["merges"].is_array(), "[tokenizer] byte_bpe: 'merges' must be a list");
    std::vector<std::string> merges, added;
    for (const auto& m : c["merges"]) {
      KILN_CHECK(m.is_string(), "[tokenizer] byte_bpe: a merge is not a string");
      merges.push_back(m.get<std::string>());
    }
    for (const auto& a : c.value("added", nlohmann::json::array())) {
      KILN_CHECK(a.is_string(), "[tokenizer] byte_bpe: an added token is not a string");
      added.push_back(a.get<std::string>());
    }
    const auto prefix = c.value("add_prefix_space", nlohmann::json(false));
    KILN_CHECK(prefix.is_boolean(), "[tokenizer] byte_bpe: add_prefix_space must be true or false");
    return ByteBpeTokenizer(c["vocab"], merges, added, prefix.get<bool>());
  }

  std::vector<int64_t> wrap(const std::vector<int64_t>& body) const {
    std::vector<int64_t> ids = {bos_};
    ids.insert(ids.end(), body.begin(), body.end());
    ids.push_back(eos_);
    return ids;
  }

  ByteBpeTokenizer bpe_;
  int64_t bos_ = 0, eos_ = 0;
  std::set<int64_t> special_;
};

}  // namespace

std::unique_ptr<TextTokenizer> make_tokenizer(const nlohmann::json& config) {
  KILN_CHECK(config.is_object() && config.contains("type") && config["type"].is_string(),
             "[tokenizer] the bundle's tokenizer has no type");
  const std::string& type = config["type"].get_ref<const std::string&>();
  if (type == "sentencepiece") return make_sentencepiece_tokenizer(config);
  if (type == "byte_bpe") return std::make_unique<ByteBpeTextTokenizer>(config);
  fail("[tokenizer] unknown tokenizer type '{}' (sentencepiece, byte_bpe)", type);
}

}  // namespace kiln
