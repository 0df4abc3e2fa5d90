#include "tasks/text/generation_config.h"

#include <cmath>
#include <set>

#include "core/error.h"
#include "core/json_int.h"

namespace kiln {

namespace {

constexpr int64_t kMaxLength = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 24;

double number(const nlohmann::json& j, const char* key, double lo, double hi) {
  KILN_CHECK(j.is_number(), "[generation] {} must be a number", key);
  const double v = j.get<double>();
  KILN_CHECK(std::isfinite(v) && v >= lo && v <= hi, "[generation] {} = {} is outside [{}, {}]", key, v, lo, hi);
  return v;
}

// An id, or a list of ids (HF allows both for eos_token_id and forced_eos_token_id).
std::vector<int64_t> ids(const nlohmann::json& j, const char* key) {
  if (j.is_array()) return json_ints(j, 64, 0, kMaxVocab - 1, std::string("[generation] ") + key);
  return {json_int(j, 0, kMaxVocab - 1, std::string("[generation] ") + key)};
}

// Sets c from one HF key (null values keep the default, as in transformers).
void apply(GenerationConfig& c, const std::string& key, const nlohmann::json& v) {
  if (v.is_null()) return;
  const std::string where = "[generation] " + key;
  if (key == "num_beams") {
    c.num_beams = static_cast<int>(json_int(v, 1, 64, where));
  } else if (key == "length_penalty") {
    c.length_penalty = number(v, "length_penalty", -100, 100);
  } else if (key == "early_stopping") {
    if (v.is_boolean())
      c.early_stopping = v.get<bool>() ? EarlyStopping::True : EarlyStopping::False;
    else if (v == "never")
      c.early_stopping = EarlyStopping::Never;
    else
      fail("[generation] early_stopping must be true, false or \"never\"");
  } else if (key == "max_length") {
    c.max_length = json_int(v, 1, kMaxLength, where);
  } else if (key == "max_new_tokens") {
    c.max_new_tokens = json_int(v, 0, kMaxLength, where);
  } else if (key == "min_length") {
    c.min_length = json_int(v, 0, kMaxLength, where);
  } else if (key == "min_new_tokens") {
    c.min_new_tokens = json_int(v, 0, kMaxLength, where);
  } else if (key == "no_repeat_ngram_size") {
    c.no_repeat_ngram_size = static_cast<int>(json_int(v, 0, 64, where));
  } else if (key == "repetition_penalty") {
    c.repetition_penalty = number(v, "repetition_penalty", 1e-6, 1e6);
  } else if (key == "bad_words_ids") {
    KILN_CHECK(v.is_array() && v.size() <= 1 << 16, "{} must be a list of lists of ids", where);
    c.bad_words_ids.clear();
    for (const auto& seq : v) c.bad_words_ids.push_back(json_ints(seq, 64, 0, kMaxVocab - 1, where));
  } else if (key == "forced_bos_token_id") {
    c.forced_bos_token_id = json_int(v, 0, kMaxVocab - 1, where);
  } else if (key == "forced_eos_token_id") {
    c.forced_eos_token_id = ids(v, "forced_eos_token_id").at(0);
  } else if (key == "decoder_start_token_id") {
    c.decoder_start_token_id = json_int(v, 0, kMaxVocab - 1, where);
  } else if (key == "pad_token_id") {
    c.pad_token_id = json_int(v, 0, kMaxVocab - 1, where);
  } else if (key == "eos_token_id") {
    c.eos_token_ids = ids(v, "eos_token_id");
  }
}

const std::set<std::string>& honoured() {
  static const std::set<std::string> keys = {
      "num_beams",           "length_penalty",      "early_stopping",         "max_length",         "max_new_tokens",
      "min_length",          "min_new_tokens",      "no_repeat_ngram_size",   "repetition_penalty", "bad_words_ids",
      "forced_bos_token_id", "forced_eos_token_id", "decoder_start_token_id", "pad_token_id",       "eos_token_id"};
  return keys;
}

// Features kiln does not implement, with the value that means "off" in transformers.
void reject_unsupported(const nlohmann::json& g) {
  const auto off = [&](const char* key, const nlohmann::json& value) {
    const auto it = g.find(key);
    KILN_CHECK(it == g.end() || it->is_null() || *it == value,
               "[generation] {} = {} is not supported (kiln generates with greedy and beam search)", key, it->dump());
  };
  off("do_sample", false);
  off("num_beam_groups", 1);
  off("diversity_penalty", 0.0);
  off("penalty_alpha", nullptr);
  off("num_return_sequences", 1);
  off("encoder_no_repeat_ngram_size", 0);
  off("encoder_repetition_penalty", 1.0);
  off("force_words_ids", nullptr);
  off("constraints", nullptr);
  off("suppress_tokens", nullptr);
  off("begin_suppress_tokens", nullptr);
  off("sequence_bias", nullptr);
  off("exponential_decay_length_penalty", nullptr);
  off("renormalize_logits", false);
  off("guidance_scale", nullptr);
}

}  // namespace

GenerationConfig GenerationConfig::from_hf(const nlohmann::json& config, const nlohmann::json& generation,
                                           int64_t vocab) {
  GenerationConfig c;
  // Legacy checkpoints keep generation settings in config.json; generation_config.json, when
  // there is one, replaces them (as transformers reads them).
  for (const auto* source : {&config, &generation}) {
    if (!source->is_object()) continue;
    reject_unsupported(*source);
    for (const auto& [key, value] : source->items())
      if (honoured().count(key)) apply(c, key, value);
  }
  c.validate(vocab);
  return c;
}

void GenerationConfig::validate(int64_t vocab) const {
  const auto in_vocab = [&](int64_t id, const char* what) {
    KILN_CHECK(id >= 0 && id < vocab, "[generation] {} {} is outside the vocabulary of {}", what, id, vocab);
  };
  KILN_CHECK(decoder_start_token_id >= 0, "[generation] the model has no decoder_start_token_id");
  in_vocab(decoder_start_token_id, "decoder_start_token_id");
  KILN_CHECK(!eos_token_ids.empty(), "[generation] the model has no eos_token_id");
  for (int64_t e : eos_token_ids) in_vocab(e, "eos_token_id");
  if (pad_token_id >= 0) in_vocab(pad_token_id, "pad_token_id");
  if (forced_bos_token_id >= 0) in_vocab(forced_bos_token_id, "forced_bos_token_id");
  if (forced_eos_token_id >= 0) in_vocab(forced_eos_token_id, "forced_eos_token_id");
  for (const auto& seq : bad_words_ids) {
    KILN_CHECK(!seq.empty(), "[generation] bad_words_ids holds an empty sequence");
    for (int64_t id : seq) in_vocab(id, "bad_words_ids entry");
  }
  KILN_CHECK(num_beams >= 1 && num_beams <= 64, "[generation] num_beams {} is outside [1, 64]", num_beams);
  KILN_CHECK(effective_max_length() >= 2, "[generation] max_length/max_new_tokens leave no token to generate");
}

nlohmann::json GenerationConfig::to_json() const {
  return {{"num_beams", num_beams},
          {"length_penalty", length_penalty},
          {"early_stopping", early_stopping == EarlyStopping::Never
                                 ? nlohmann::json("never")
                                 : nlohmann::json(early_stopping == EarlyStopping::True)},
          {"max_length", max_length},
          {"max_new_tokens", max_new_tokens >= 0 ? nlohmann::json(max_new_tokens) : nlohmann::json()},
          {"min_length", min_length},
          {"min_new_tokens", min_new_tokens >= 0 ? nlohmann::json(min_new_tokens) : nlohmann::json()},
          {"no_repeat_ngram_size", no_repeat_ngram_size},
          {"repetition_penalty", repetition_penalty},
          {"bad_words_ids", bad_words_ids},
          {"forced_bos_token_id", forced_bos_token_id >= 0 ? nlohmann::json(forced_bos_token_id) : nlohmann::json()},
          {"forced_eos_token_id", forced_eos_token_id >= 0 ? nlohmann::json(forced_eos_token_id) : nlohmann::json()},
          {"decoder_start_token_id", decoder_start_token_id},
          {"pad_token_id", pad_token_id >= 0 ? nlohmann::json(pad_token_id) : nlohmann::json()},
          {"eos_token_id", eos_token_ids}};
}

GenerationConfig GenerationConfig::from_json(const nlohmann::json& j, int64_t vocab) {
  KILN_CHECK(j.is_object(), "[generation] the bundle's generation settings are not an object");
  GenerationConfig c;
  for (const auto& [key, value] : j.items()) {
    KILN_CHECK(honoured().count(key), "[generation] unknown setting '{}'", key);
    apply(c, key, value);
  }
  c.validate(vocab);
  return c;
}

}  // namespace kiln
