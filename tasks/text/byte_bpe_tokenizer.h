// Byte-level BPE tokenisation (GPT-2, RoBERTa), exact to Hugging Face `tokenizers` with a ByteLevel
// pre-tokenizer, a BPE model without dropout or unknown token, and a ByteLevel decoder.
//   encode: added tokens are cut out of the text first (leftmost match, the longest one there);
//           every other stretch gets a leading space when add_prefix_space is set and it does not
//           start with one, is split by the GPT-2 regex, each byte becomes one printable symbol,
//           and symbols merge by BPE, lowest merge rank first (leftmost on a tie).
//   decode: tokens map back to bytes; bytes that do not form UTF-8 become U+FFFD, one per maximal
//           invalid subsequence, as Rust's from_utf8_lossy and Python's errors="replace" do.
// Spaces before punctuation are kept as decoded: transformers 5 no longer cleans them up by default.
// All methods are const and keep no cache, so one tokenizer may serve several threads.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln {

class ByteBpeTokenizer {
 public:
  // vocab: the vocab.json object (token string -> id); merges: merges.txt's lines in order
  // (a "#version" first line and blank lines are skipped); added: special/added tokens
  // (e.g. "<s>", "<pad>", "</s>", "<unk>", "<mask>") that are matched verbatim in input text
  // before BPE and never split; add_prefix_space as in tokenizer_config.json.
  // The ids must be 0..size-1, each once; every byte's symbol, both halves and the result of
  // every merge, and every added token must be in the vocab. Anything else is a kiln::Error.
  ByteBpeTokenizer(const nlohmann::json& vocab, const std::vector<std::string>& merges,
                   const std::vector<std::string>& added, bool add_prefix_space);

  // Text (UTF-8; invalid UTF-8 -> kiln::Error with a one-line message) -> ids, no bos/eos added.
  std::vector<int64_t> encode(std::string_view text) const;
  // ids -> text; ids listed in `skip` are dropped (skip_special_tokens); bytes that do not form
  // valid UTF-8 are replaced with U+FFFD like errors="replace". Unknown ids -> kiln::Error.
  std::string decode(const std::vector<int64_t>& ids, const std::set<int64_t>& skip) const;
  int64_t id_of(const std::string& token) const;  // -1 when absent
  int64_t vocab_size() const { return static_cast<int64_t>(token_bytes_.size()); }

 private:
  struct AddedToken {
    std::string text;
    int32_t id;
  };
  struct Merge {
    uint32_t rank;  // position in merges.txt: lower merges first
    int32_t id;     // the merged token
  };

  void encode_stretch(std::string_view text, std::vector<int64_t>& ids) const;
  void merge_word(std::string_view word, std::vector<int64_t>& ids) const;
  const AddedToken* added_at(std::string_view text, size_t pos) const;
  const Merge* find_merge(int32_t left, int32_t right) const;

  std::unordered_map<std::string, int32_t> ids_;    // token -> id
  std::vector<std::string> token_bytes_;            // id -> the bytes it decodes to
  std::array<int32_t, 256> byte_ids_{};             // byte -> id of its one-symbol token
  std::unordered_map<uint64_t, Merge> merges_;      // (left id << 32 | right id) -> merge
  std::array<std::vector<AddedToken>, 256> added_;  // by first byte, longest first
  bool add_prefix_space_;
};

}  // namespace kiln
