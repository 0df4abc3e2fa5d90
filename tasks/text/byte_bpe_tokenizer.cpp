#include "tasks/text/byte_bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cassert>
#include <limits>
#include <memory>
#include <new>
#include <queue>

#include "core/error.h"
#include "core/utf8.h"

namespace kiln {
namespace {

// GPT-2's byte -> symbol table: printable Latin-1 bytes stand for themselves and the others (controls,
// space, DEL, NBSP, soft hyphen) take U+0100 onwards in byte order, so that every token is printable.
constexpr std::array<char32_t, 256> byte_symbols() {
  std::array<char32_t, 256> symbols{};
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    symbols[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return symbols;
}
constexpr std::array<char32_t, 256> kByteSymbols = byte_symbols();
constexpr char32_t kLastSymbol = 0x143;  // 68 bytes are not printable: U+0100..U+0143
static_assert(kByteSymbols[0xAD] == kLastSymbol);

// The inverse table: symbol -> byte, -1 for code points that stand for no byte.
constexpr std::array<int16_t, kLastSymbol + 1> symbol_bytes() {
  std::array<int16_t, kLastSymbol + 1> bytes{};
  bytes.fill(-1);
  for (int b = 0; b < 256; ++b) bytes[kByteSymbols[b]] = static_cast<int16_t>(b);
  return bytes;
}
constexpr std::array<int16_t, kLastSymbol + 1> kSymbolBytes = symbol_bytes();

// A token (or line) quoted and escaped for a one-line error message.
std::string escaped(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The GPT-2 pre-tokenisation regex, compiled once for all tokenizers (PCRE2 code may be matched from
// several threads at once). `tokenizers` runs it with Oniguruma, whose Unicode \s is
// U+0009-U+000D, U+0085 and the separators \p{Z}; PCRE2's \s is ASCII-only, or with PCRE2_UCP also
// takes U+180E, so the class is spelled out to split exactly where `tokenizers` does.
class Pretokenizer {
 public:
  Pretokenizer() {
    const std::string space = R"(\t-\r\x{85}\p{Z})";
    const std::string pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^)" + space + R"(\p{L}\p{N}]+|[)" +
                                space + "]+(?![^" + space + "])|[" + space + "]+";
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF, &error, &offset,
                          nullptr);
    if (!code_) fail("[tokenizer] cannot compile the pre-tokenisation regex at {}: {}", offset, message(error));
    // JIT is only faster; where PCRE2 was built without it, matching falls back to the interpreter.
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
  }
  ~Pretokenizer() { pcre2_code_free(code_); }
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // The words of valid UTF-8 text, in order. Every code point is whitespace, a letter, a number or
  // something else, so the matches tile the text.
  std::vector<std::string_view> words(std::string_view text) const {
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(code_, nullptr), &pcre2_match_data_free);
    if (!match) throw std::bad_alloc();
    std::vector<std::string_view> words;
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    for (size_t start = 0; start < text.size();) {
      // The text was checked once; checking it again at every word would be quadratic.
      const int rc = pcre2_match(code_, subject, text.size(), start, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
      if (rc < 0) fail("[tokenizer] pre-tokenisation failed at byte {}: {}", start, message(rc));
      const PCRE2_SIZE end = pcre2_get_ovector_pointer(match.get())[1];
      assert(pcre2_get_ovector_pointer(match.get())[0] == start && end > start);
      words.push_back(text.substr(start, end - start));
      start = end;
    }
    return words;
  }

 private:
  static std::string message(int error) {
    PCRE2_UCHAR buffer[256];
    const int n = pcre2_get_error_message(error, buffer, sizeof buffer);
    return n < 0 ? fmt::format("PCRE2 error {}", error) : std::string(reinterpret_cast<char*>(buffer), n);
  }

  pcre2_code* code_ = nullptr;
};

const Pretokenizer& pretokenizer() {
  static const Pretokenizer instance;
  return instance;
}

std::vector<std::string> load_vocab(const nlohmann::json& vocab) {
  KILN_CHECK(vocab.is_object(), "[tokenizer] vocab must be a JSON object of token -> id, not {}", vocab.type_name());
  KILN_CHECK(vocab.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
             "[tokenizer] vocab has {} tokens, more than ids can number", vocab.size());
  const size_t n = vocab.size();
  std::vector<std::string> tokens(n);
  std::vector<bool> taken(n, false);
  for (const auto& [token, value] : vocab.items()) {
    KILN_CHECK(value.is_number_integer(), "[tokenizer] vocab: the id of {} is {}, not an integer", escaped(token),
               value.dump());
    const bool in_range = value.is_number_unsigned() ? value.get<uint64_t>() < n
                                                     : value.get<int64_t>() >= 0 && value.get<int64_t>() < int64_t(n);
    KILN_CHECK(in_range, "[tokenizer] vocab: the id {} of {} is outside 0..{}", value.dump(), escaped(token), n - 1);
    const size_t id = value.get<size_t>();
    KILN_CHECK(!taken[id], "[tokenizer] vocab: {} and {} share the id {}", escaped(tokens[id]), escaped(token), id);
    taken[id] = true;
    tokens[id] = token;
  }
  return tokens;
}

// The bytes a token decodes to. Like `tokenizers`, a token with a character outside the byte
// alphabet (an added token written as plain text) decodes to its own UTF-8 unchanged.
std::string token_bytes(const std::string& token) {
  std::string bytes;
  for (size_t i = 0; i < token.size();) {
    const Utf8Step step = utf8_step(token, i);
    if (!step.valid) return token;
    const char32_t cp = code_point_at(token, i, step.length);
    if (cp > kLastSymbol || kSymbolBytes[cp] < 0) return token;
    bytes += static_cast<char>(kSymbolBytes[cp]);
    i += step.length;
  }
  return bytes;
}

uint64_t pair_key(int32_t left, int32_t right) { return uint64_t(uint32_t(left)) << 32 | uint32_t(right); }

}  // namespace

ByteBpeTokenizer::ByteBpeTokenizer(const nlohmann::json& vocab, const std::vector<std::string>& merges,
                                   const std::vector<std::string>& added, bool add_prefix_space)
    : add_prefix_space_(add_prefix_space) {
  const std::vector<std::string> tokens = load_vocab(vocab);
  token_bytes_.reserve(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id) {
    ids_.emplace(tokens[id], static_cast<int32_t>(id));
    token_bytes_.push_back(token_bytes(tokens[id]));
  }

  // `tokenizers` drops symbols missing from the vocab without a word; a vocab without the whole
  // byte alphabet is not byte-level, so it is refused instead.
  for (int b = 0; b < 256; ++b) {
    std::string symbol;
    append_utf8(symbol, kByteSymbols[b]);
    const int64_t id = id_of(symbol);
    KILN_CHECK(id >= 0, "[tokenizer] vocab lacks {}, the symbol of byte 0x{:02x}", escaped(symbol), b);
    byte_ids_[b] = static_cast<int32_t>(id);
  }

  uint32_t rank = 0;
  for (size_t line = 0; line < merges.size(); ++line) {
    const std::string& text = merges[line];
    // Like `tokenizers`, skip a "#version" line wherever it stands.
    if (text.empty() || text.starts_with("#version")) continue;
    const size_t space = text.find(' ');
    KILN_CHECK(space != std::string::npos && text.find(' ', space + 1) == std::string::npos,
               "[tokenizer] merges line {}: expected two tokens separated by one space, got {}", line + 1,
               escaped(text));
    const std::string left = text.substr(0, space), right = text.substr(space + 1);
    for (const std::string& token : {left, right, left + right})
      KILN_CHECK(ids_.contains(token), "[tokenizer] merges line {}: {} is not in the vocab", line + 1, escaped(token));
    // A pair listed twice keeps its later rank, as in the map `tokenizers` builds.
    merges_[pair_key(ids_.at(left), ids_.at(right))] = {rank++, ids_.at(left + right)};
  }

  for (const std::string& token : added) {
    KILN_CHECK(!token.empty(), "[tokenizer] an added token is empty");
    // A token with a stray byte could match inside a character and leave invalid UTF-8 to the regex.
    KILN_CHECK(first_invalid_utf8(token) == std::string_view::npos, "[tokenizer] added token {} is not valid UTF-8",
               escaped(token));
    const int64_t id = id_of(token);
    KILN_CHECK(id >= 0, "[tokenizer] added token {} is not in the vocab", escaped(token));
    added_[static_cast<unsigned char>(token[0])].push_back({token, static_cast<int32_t>(id)});
  }
  for (auto& candidates : added_)
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.text.size() > b.text.size(); });
}

int64_t ByteBpeTokenizer::id_of(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

std::vector<int64_t> ByteBpeTokenizer::encode(std::string_view text) const {
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos)
    fail("[tokenizer] text is not valid UTF-8: byte 0x{:02x} at offset {}", static_cast<unsigned char>(text[bad]), bad);
  std::vector<int64_t> ids;
  size_t stretch = 0;  // where the text not yet encoded begins
  for (size_t pos = 0; pos < text.size();) {
    const AddedToken* token = added_at(text, pos);
    if (!token) {
      ++pos;
      continue;
    }
    encode_stretch(text.substr(stretch, pos - stretch), ids);
    ids.push_back(token->id);
    pos += token->text.size();
    stretch = pos;
  }
  encode_stretch(text.substr(stretch), ids);
  return ids;
}

// The added token that starts at `pos`, the longest when several do.
const ByteBpeTokenizer::AddedToken* ByteBpeTokenizer::added_at(std::string_view text, size_t pos) const {
  for (const AddedToken& token : added_[static_cast<unsigned char>(text[pos])])
    if (text.substr(pos).starts_with(token.text)) return &token;
  return nullptr;
}

// Text between added tokens: each such stretch is pre-tokenised on its own, as `tokenizers` does,
// so with add_prefix_space every stretch (not only the first) gains the leading space.
void ByteBpeTokenizer::encode_stretch(std::string_view text, std::vector<int64_t>& ids) const {
  if (text.empty()) return;
  std::string prefixed;
  if (add_prefix_space_ && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  for (std::string_view word : pretokenizer().words(text)) merge_word(word, ids);
}

const ByteBpeTokenizer::Merge* ByteBpeTokenizer::find_merge(int32_t left, int32_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

// BPE as `tokenizers` runs it: a queue of adjacent pairs ordered by (rank, position); popping one
// whose symbols have changed since it was queued does nothing. The order matters only for merge
// lists that are not in training order, but then it is what makes the result exact.
void ByteBpeTokenizer::merge_word(std::string_view word, std::vector<int64_t>& ids) const {
  struct Symbol {
    int32_t id, prev, next;  // prev/next: neighbouring live symbols, -1 at the ends
    bool merged_away;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;  // the left symbol
    int32_t id;   // the token the pair merges into
  };
  KILN_CHECK(word.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()),
             "[tokenizer] a word of {} bytes is too long to encode", word.size());
  const auto n = static_cast<int32_t>(word.size());
  std::vector<Symbol> symbols(n);
  for (int32_t i = 0; i < n; ++i)
    symbols[i] = {byte_ids_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, false};

  auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
  auto consider = [&](int32_t pos) {
    if (symbols[pos].next < 0) return;
    if (const Merge* merge = find_merge(symbols[pos].id, symbols[symbols[pos].next].id))
      queue.push({merge->rank, pos, merge->id});
  };
  for (int32_t i = 0; i < n; ++i) consider(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.merged_away || left.next < 0) continue;
    const Merge* merge = find_merge(left.id, symbols[left.next].id);
    if (!merge || merge->id != top.id) continue;
    Symbol& right = symbols[left.next];
    right.merged_away = true;
    left.id = top.id;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol& s : symbols)
    if (!s.merged_away) ids.push_back(s.id);
}

std::string ByteBpeTokenizer::decode(const std::vector<int64_t>& ids, const std::set<int64_t>& skip) const {
  std::string bytes;
  for (int64_t id : ids) {
    KILN_CHECK(id >= 0 && id < vocab_size(), "[tokenizer] cannot decode token id {}: the vocab has ids 0..{}", id,
               vocab_size() - 1);
    if (!skip.contains(id)) bytes += token_bytes_[id];
  }
  std::string text;
  text.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const Utf8Step step = utf8_step(bytes, i);
    if (step.valid)
      text.append(bytes, i, step.length);
    else
      text += "\xEF\xBF\xBD";  // U+FFFD
    i += step.length;
  }
  return text;
}

}  // namespace kiln
