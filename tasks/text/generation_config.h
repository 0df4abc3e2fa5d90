// How an encoder-decoder generates: the keys of Hugging Face's generation_config.json that
// kiln honours, with transformers' defaults and meanings. A family reads them from the
// checkpoint at build time (generation_config.json over the legacy keys of config.json); the
// bundle stores them; callers override per call.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

enum class EarlyStopping { False, True, Never };

struct GenerationConfig {
  int num_beams = 1;
  double length_penalty = 1.0;  // finished beams score sum(log p) / length ** length_penalty
  EarlyStopping early_stopping = EarlyStopping::False;
  int64_t max_length = 20;          // decoded sequence, start token included
  int64_t max_new_tokens = -1;      // when >= 0: max_length = 1 + max_new_tokens
  int64_t min_length = 0;           // no EOS before the sequence (start token included) is this long
  int64_t min_new_tokens = -1;      // no EOS before this many new tokens
  int no_repeat_ngram_size = 0;     // no n-gram of this size twice
  double repetition_penalty = 1.0;  // scores of tokens already in the sequence divided (or, negative, multiplied)
  std::vector<std::vector<int64_t>> bad_words_ids;
  int64_t forced_bos_token_id = -1;  // first generated token
  int64_t forced_eos_token_id = -1;  // token at max_length
  int64_t decoder_start_token_id = -1, pad_token_id = -1;
  std::vector<int64_t> eos_token_ids;

  // The longest decoded sequence these settings allow (start token included).
  int64_t effective_max_length() const { return max_new_tokens >= 0 ? 1 + max_new_tokens : max_length; }
  // Checks ranges against the vocabulary; fails naming the setting.
  void validate(int64_t vocab) const;

  // Hugging Face keys (untrusted: checked); unsupported features set to anything but their
  // default (sampling, beam groups, constraints...) are errors naming them.
  static GenerationConfig from_hf(const nlohmann::json& config_json, const nlohmann::json& generation_config_json,
                                  int64_t vocab);
  // kiln's own form in a bundle, and back (checked).
  nlohmann::json to_json() const;
  static GenerationConfig from_json(const nlohmann::json& j, int64_t vocab);
};

}  // namespace kiln
