// Text <-> token ids for an encoder-decoder model, as its Hugging Face tokenizer does them. A
// bundle carries its tokenizer as JSON in the task settings ("tokenizer"), made by the family
// at build time; make_tokenizer reads it back (untrusted: every field is checked).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace kiln {

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  // Source text -> the encoder's ids with the model's special tokens (a trailing </s>, or
  // <s> ... </s>). At most max_tokens ids: longer text loses tokens at its end, as the
  // reference's truncation does, and *truncated says so. Invalid UTF-8 is an error.
  virtual std::vector<int64_t> encode_source(std::string_view text, size_t max_tokens, bool* truncated) const = 0;
  // Target-language text -> ids as the decoder was trained on them (labels), special tokens
  // included, not truncated.
  virtual std::vector<int64_t> encode_target(std::string_view text) const = 0;
  // Generated ids -> text, special tokens skipped (skip_special_tokens=True).
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
};

std::unique_ptr<TextTokenizer> make_tokenizer(const nlohmann::json& config);

}  // namespace kiln
