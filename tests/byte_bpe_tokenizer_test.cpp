// The byte-level BPE tokenizer against transformers' tokenizer (tokenizers backend) on the tiny
// seq2seq fixture: every recorded encoding and decoding exactly, edge cases, splits checked by
// hand, the order BPE merges in, malformed inputs, and a lossless round trip over whole WMT22 files.
#include "tasks/text/byte_bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/test_support.h"

namespace kiln {
namespace {

using Ids = std::vector<int64_t>;

const std::string kFixture = "checkpoints/bart-tiny-lead/";
const std::vector<std::string> kSpecials = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Lines without their '\n'; a final newline does not start another line.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

nlohmann::json read_json(const std::string& rel) { return nlohmann::json::parse(read_text(test::data_path(rel))); }

ByteBpeTokenizer load_fixture(bool add_prefix_space) {
  return ByteBpeTokenizer(read_json(kFixture + "vocab.json"),
                          lines_of(read_text(test::data_path(kFixture + "merges.txt"))), kSpecials, add_prefix_space);
}

// As transformers loads it: add_prefix_space from tokenizer_config.json.
const ByteBpeTokenizer& fixture() {
  static const ByteBpeTokenizer tok =
      load_fixture(read_json(kFixture + "tokenizer_config.json").at("add_prefix_space").get<bool>());
  return tok;
}

const nlohmann::json& reference() {
  static const nlohmann::json ref = read_json("reference/bart-tiny-lead.reference.json");
  return ref;
}

std::set<int64_t> special_ids(const ByteBpeTokenizer& tok) {
  std::set<int64_t> ids;
  for (const std::string& s : kSpecials) ids.insert(tok.id_of(s));
  return ids;
}

// Ids of tokens given by their text; a token missing from the vocab fails the test.
Ids ids_of(const ByteBpeTokenizer& tok, const std::vector<std::string>& tokens) {
  Ids ids;
  for (const std::string& t : tokens) {
    EXPECT_GE(tok.id_of(t), 0) << t;
    ids.push_back(tok.id_of(t));
  }
  return ids;
}

Ids concat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// GPT-2's byte -> symbol mapping, written out independently of the tokenizer's.
std::string symbols(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) {
    int cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
      cp = 0x100;
      for (int c = 0; c < b; ++c)
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)) ++cp;
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// A vocab of the 256 byte symbols, id = byte value, then `extra` tokens in order.
nlohmann::json byte_vocab(const std::vector<std::string>& extra = {}) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[symbols(std::string(1, static_cast<char>(b)))] = b;
  for (const std::string& t : extra)
    if (!vocab.contains(t)) vocab[t] = vocab.size();
  return vocab;
}

// A small tokenizer whose vocab holds the byte symbols, every merge's result and the added tokens.
ByteBpeTokenizer synthetic(const std::vector<std::string>& merges, const std::vector<std::string>& added = {}) {
  std::vector<std::string> extra;
  for (const std::string& m : merges) extra.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
  extra.insert(extra.end(), added.begin(), added.end());
  return ByteBpeTokenizer(byte_vocab(extra), merges, added, false);
}

// Merges that join the bytes of `text` left to right into one token.
std::vector<std::string> chain_merges(std::string_view text) {
  std::vector<std::string> merges;
  for (size_t i = 1; i < text.size(); ++i)
    merges.push_back(symbols(text.substr(0, i)) + " " + symbols(text.substr(i, 1)));
  return merges;
}

TEST(ByteBpeTokenizer, MatchesReferenceEncodings) {
  const ByteBpeTokenizer& tok = fixture();
  const Ids bos = {tok.id_of("<s>")}, eos = {tok.id_of("</s>")};
  size_t checked = 0;
  for (const auto& c : reference().at("tokenizer_checks")) {
    const std::string text = c.at("text");
    EXPECT_EQ(concat(concat(bos, tok.encode(text)), eos), c.at("ids").get<Ids>()) << text;
    ++checked;
  }
  for (const auto& e : reference().at("examples")) {
    const std::string text = e.at("source");
    EXPECT_EQ(concat(concat(bos, tok.encode(text)), eos), e.at("source_ids").get<Ids>()) << text;
    ++checked;
  }
  EXPECT_EQ(checked, 160u);
}

TEST(ByteBpeTokenizer, MatchesReferenceDecodings) {
  const ByteBpeTokenizer& tok = fixture();
  const std::set<int64_t> skip = special_ids(tok);
  size_t checked = 0;
  for (const auto& e : reference().at("examples")) {
    for (const std::string kind : {"greedy", "default"}) {
      EXPECT_EQ(tok.decode(e.at(kind + "_ids").get<Ids>(), skip), e.at(kind + "_text").get<std::string>()) << kind;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 160u);
}

TEST(ByteBpeTokenizer, RoundTripsWholeTextFiles) {
  const ByteBpeTokenizer& tok = fixture();
  for (const std::string file : {"wmt22.en-de.en", "wmt22.en-de.de", "wmt22.en-ru.en", "wmt22.en-ru.ru"}) {
    const std::vector<std::string> lines = lines_of(read_text(test::data_path("data/text/" + file)));
    ASSERT_GT(lines.size(), 1000u) << file;
    size_t failures = 0;
    for (const std::string& line : lines)
      if (tok.decode(tok.encode(line), {}) != line && ++failures <= 3) ADD_FAILURE() << file << ": " << line;
    EXPECT_EQ(failures, 0u) << file << " of " << lines.size() << " lines";
  }
}

TEST(ByteBpeTokenizer, SplitsAsTheGpt2Regex) {
  const ByteBpeTokenizer& tok = fixture();
  ASSERT_EQ(tok.vocab_size(), 4000);
  EXPECT_EQ(tok.encode(""), Ids{});
  // No multi-space token in this vocab, so runs of spaces stay one symbol per space.
  ASSERT_EQ(tok.id_of("ĠĠ"), -1);
  EXPECT_EQ(tok.encode("   "), ids_of(tok, {"Ġ", "Ġ", "Ġ"}));
  // Of a run of spaces before a word, the last space goes with the word.
  EXPECT_EQ(tok.encode("a  b"), ids_of(tok, {"a", "Ġ", "Ġb"}));
  EXPECT_EQ(tok.encode("a  "), ids_of(tok, {"a", "Ġ", "Ġ"}));
  // Newlines and tabs are whitespace but never join the following word.
  EXPECT_EQ(tok.encode("a\n\nb"), ids_of(tok, {"a", "Ċ", "Ċ", "b"}));
  EXPECT_EQ(tok.encode("a\tb"), ids_of(tok, {"a", "ĉ", "b"}));
  // Contractions are lower-case only; "'LL" is punctuation, then letters.
  EXPECT_EQ(tok.encode("I'll don't"), ids_of(tok, {"I", "'ll", "Ġdon", "'t"}));
  EXPECT_EQ(tok.encode("I'LL"), ids_of(tok, {"I", "'", "L", "L"}));
}

TEST(ByteBpeTokenizer, MatchesTheOriginalEncoderOnUnicode) {
  // Ids from a Python port of OpenAI's GPT-2 encoder.py (the `regex` module) on this vocab and merges.
  const ByteBpeTokenizer& tok = fixture();
  const std::string emoji = "Tokyo 東京 🙂👍🏽 done";
  EXPECT_EQ(tok.encode(emoji), (Ids{56,  1098, 93,  83,  225, 167, 256, 114, 165, 123, 110, 225, 177,
                                    258, 252,  229, 177, 258, 244, 240, 177, 258, 242, 126, 1154}));
  const std::string latin = "naïve café, 1999 – 3.14%!";
  EXPECT_EQ(tok.encode(latin),
            (Ids{2203, 132, 112, 308, 273, 69, 74, 132, 107, 16, 2385, 29, 3764, 608, 18, 21, 24, 9, 5}));
  EXPECT_EQ(tok.decode(tok.encode(emoji), {}), emoji);
  EXPECT_EQ(tok.decode(tok.encode(latin), {}), latin);
}

TEST(ByteBpeTokenizer, CutsAddedTokensOutFirst) {
  const ByteBpeTokenizer& tok = fixture();
  ASSERT_EQ(tok.id_of("<mask>"), 4);
  // The space before "<mask>" stays a token of its own (the token has lstrip off).
  EXPECT_EQ(tok.encode("Hello <mask> world"), concat(tok.encode("Hello"), {tok.id_of("Ġ"), 4, tok.id_of("Ġworld")}));
  EXPECT_EQ(tok.encode("<mask><mask>"), (Ids{4, 4}));
  EXPECT_EQ(tok.encode("<s>a</s>"), (Ids{0, tok.id_of("a"), 2}));
  EXPECT_EQ(tok.decode(tok.encode("x<pad>y<unk>"), {}), "x<pad>y<unk>");
  const Ids partial = tok.encode("<mask");
  EXPECT_EQ(std::count(partial.begin(), partial.end(), 4), 0);
  EXPECT_EQ(tok.decode(partial, {}), "<mask");
}

TEST(ByteBpeTokenizer, AddsThePrefixSpaceToEveryStretch) {
  const ByteBpeTokenizer tok = load_fixture(true);
  EXPECT_EQ(tok.encode("world"), ids_of(tok, {"Ġworld"}));
  EXPECT_EQ(tok.encode(" world"), ids_of(tok, {"Ġworld"}));
  EXPECT_EQ(tok.encode("a<mask>b"), concat(ids_of(tok, {"Ġa"}), concat({4}, ids_of(tok, {"Ġb"}))));
  EXPECT_EQ(tok.encode("<mask>"), (Ids{4}));
  EXPECT_EQ(tok.encode(""), Ids{});
}

TEST(ByteBpeTokenizer, TreatsWhitespaceAsOnigurumaDoes) {
  // With merges that would join the character and "!" into one token, two tokens mean the regex
  // split them: the character is whitespace (U+0009-U+000D, U+0085, \p{Z}).
  for (const std::string space : {"\u00a0", "\u3000", "\u2028", "\xc2\x85", "\v"}) {
    const ByteBpeTokenizer tok = synthetic(chain_merges(space + "!"));
    EXPECT_EQ(tok.encode(space + "!").size(), 2u) << symbols(space);
  }
  // U+180E (PCRE2's \h has it), U+200B and U+001C (Python's isspace() has it) are not whitespace.
  for (const std::string other : {"\u180e", "\u200b", "\x1c"}) {
    const ByteBpeTokenizer tok = synthetic(chain_merges(other + "!"));
    EXPECT_EQ(tok.encode(other + "!"), Ids{tok.id_of(symbols(other + "!"))}) << symbols(other);
  }
}

TEST(ByteBpeTokenizer, MergesLowestRankFirstThenLeftmost) {
  const ByteBpeTokenizer ab_first = synthetic({"a b", "b c"});
  EXPECT_EQ(ab_first.encode("abc"), ids_of(ab_first, {"ab", "c"}));
  const ByteBpeTokenizer bc_first = synthetic({"b c", "a b"});
  EXPECT_EQ(bc_first.encode("abc"), ids_of(bc_first, {"a", "bc"}));
  const ByteBpeTokenizer aa = synthetic({"a a"});
  EXPECT_EQ(aa.encode("aaa"), ids_of(aa, {"aa", "a"}));
  EXPECT_EQ(aa.encode("aaaaa"), ids_of(aa, {"aa", "aa", "a"}));
  // A pair listed twice keeps its later rank.
  const ByteBpeTokenizer repeated = synthetic({"a b", "b c", "a b"});
  EXPECT_EQ(repeated.encode("abc"), ids_of(repeated, {"a", "bc"}));
  // Out of training order, a merge made from a fresh token can outrank the pair that made it:
  // tokenizers merges "ab"+"a" before the second "a"+"b" (GPT-2's Python gives "ab", "ab").
  const ByteBpeTokenizer queue = synthetic({"ab a", "a b"});
  EXPECT_EQ(queue.encode("abab"), ids_of(queue, {"aba", "b"}));
}

TEST(ByteBpeTokenizer, MatchesTheLongestAddedTokenAtTheLeftmostPlace) {
  const ByteBpeTokenizer nested = synthetic({}, {"<a>", "<a>b"});
  EXPECT_EQ(nested.encode("x<a>by<a>"), ids_of(nested, {"x", "<a>b", "y", "<a>"}));
  const ByteBpeTokenizer overlapping = synthetic({}, {"ab", "bcd"});
  EXPECT_EQ(overlapping.encode("abcd"), ids_of(overlapping, {"ab", "c", "d"}));
  // An added token outside the byte alphabet matches as text and decodes to itself.
  const ByteBpeTokenizer plain = synthetic({}, {"日本"});
  EXPECT_EQ(plain.encode("日本"), ids_of(plain, {"日本"}));
  EXPECT_EQ(plain.decode(plain.encode("x日本"), {}), "x日本");
}

TEST(ByteBpeTokenizer, DecodesLikeErrorsReplace) {
  const ByteBpeTokenizer tok = synthetic({});  // id = byte value
  const std::string fffd = "\uFFFD";
  EXPECT_EQ(tok.decode({0xE2, 0x82, 0xAC}, {}), "€");
  EXPECT_EQ(tok.decode({0xE2, 'A'}, {}), fffd + "A");
  EXPECT_EQ(tok.decode({0xE2, 0x82}, {}), fffd);  // a truncated sequence is one replacement
  EXPECT_EQ(tok.decode({0xF0, 0x80}, {}), fffd + fffd);
  EXPECT_EQ(tok.decode({0xC0, 0xAF}, {}), fffd + fffd);               // overlong
  EXPECT_EQ(tok.decode({0xED, 0xA0, 0x80}, {}), fffd + fffd + fffd);  // surrogate
  EXPECT_EQ(tok.decode({0xF4, 0x90, 0x80, 0x80}, {}), fffd + fffd + fffd + fffd);
  EXPECT_EQ(tok.decode({0xF0, 0x9F, 0x98, 0x80, 0x80}, {}), "😀" + fffd);
}

TEST(ByteBpeTokenizer, DecodeSkipsAndRejects) {
  const ByteBpeTokenizer& tok = fixture();
  const Ids ids = concat(concat({0}, tok.encode("Hi <mask>")), {2, 1});
  EXPECT_EQ(tok.decode(ids, special_ids(tok)), "Hi ");
  EXPECT_EQ(tok.decode(ids, {}), "<s>Hi <mask></s><pad>");
  EXPECT_EQ(tok.decode({}, {}), "");
  for (int64_t bad : {int64_t{4000}, int64_t{-1}}) {
    const std::string msg = test::error_message([&] { tok.decode({bad}, {}); });
    EXPECT_NE(msg.find("[tokenizer] cannot decode token id " + std::to_string(bad)), std::string::npos) << msg;
  }
}

TEST(ByteBpeTokenizer, RejectsInvalidUtf8) {
  const ByteBpeTokenizer& tok = fixture();
  for (const std::string bad : {"abc\xff", "\xe2\x82", "x\xc0\xaf", "\xed\xa0\x80", "\x80"}) {
    const std::string msg = test::error_message([&] { tok.encode(bad); });
    EXPECT_NE(msg.find("[tokenizer] text is not valid UTF-8"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_NE(test::error_message([&] { tok.encode("abc\xff"); }).find("byte 0xff at offset 3"), std::string::npos);
}

// The message of the error that constructing the tokenizer throws, "" when it throws none.
std::string construct_error(const nlohmann::json& vocab, const std::vector<std::string>& merges = {},
                            const std::vector<std::string>& added = {}) {
  return test::error_message([&] { ByteBpeTokenizer(vocab, merges, added, false); });
}

TEST(ByteBpeTokenizer, RejectsMalformedVocab) {
  EXPECT_EQ(construct_error(byte_vocab()), "");
  EXPECT_NE(construct_error(nlohmann::json::array()).find("JSON object"), std::string::npos);
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {"256", "not an integer"}, {1.5, "not an integer"}, {nullptr, "not an integer"},
      {257, "outside 0..256"},   {-1, "outside 0..256"},  {5, "share the id 5"}};
  for (const auto& [id, expected] : cases) {
    nlohmann::json vocab = byte_vocab();
    vocab["zz"] = id;
    const std::string msg = construct_error(vocab);
    EXPECT_EQ(msg.rfind("[tokenizer] vocab", 0), 0u) << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
  }
  nlohmann::json missing_byte = byte_vocab();
  missing_byte.erase(symbols("\xff"));
  EXPECT_NE(construct_error(missing_byte).find("symbol of byte 0xff"), std::string::npos);
  EXPECT_NE(construct_error(nlohmann::json::object()).find("symbol of byte 0x00"), std::string::npos);
}

TEST(ByteBpeTokenizer, RejectsMalformedMerges) {
  const nlohmann::json vocab = byte_vocab({"ab"});
  EXPECT_EQ(construct_error(vocab, {"#version: 0.2", "a b", ""}), "");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"ab"}, "merges line 1: expected two tokens"},
      {{"#version: 0.2", "a b c"}, "merges line 2: expected two tokens"},
      {{"a  b"}, "merges line 1: expected two tokens"},
      {{"a\nb"}, "merges line 1: expected two tokens"},
      {{"a zz"}, "merges line 1: \"zz\" is not in the vocab"},
      {{"a b\r"}, "merges line 1: \"b\\r\" is not in the vocab"},
      {{"a b", "b c"}, "merges line 2: \"bc\" is not in the vocab"}};
  for (const auto& [merges, expected] : cases) {
    const std::string msg = construct_error(vocab, merges);
    EXPECT_NE(msg.find("[tokenizer] " + expected), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ByteBpeTokenizer, RejectsMalformedAddedTokens) {
  const nlohmann::json vocab = byte_vocab({"<s>"});
  EXPECT_EQ(construct_error(vocab, {}, {"<s>"}), "");
  EXPECT_NE(construct_error(vocab, {}, {""}).find("[tokenizer] an added token is empty"), std::string::npos);
  EXPECT_NE(construct_error(vocab, {}, {"<mask>"}).find("\"<mask>\" is not in the vocab"), std::string::npos);
  EXPECT_NE(construct_error(vocab, {}, {"\x80"}).find("not valid UTF-8"), std::string::npos);
}

TEST(ByteBpeTokenizer, EncodesFromSeveralThreads) {
  const ByteBpeTokenizer& tok = fixture();
  std::vector<std::string> texts;
  for (const auto& c : reference().at("tokenizer_checks")) texts.push_back(c.at("text"));
  std::vector<Ids> expected;
  for (const std::string& t : texts) expected.push_back(tok.encode(t));
  std::vector<std::vector<Ids>> got(4);
  std::vector<std::thread> threads;
  for (auto& out : got)
    threads.emplace_back([&tok, &texts, &out] {
      for (int round = 0; round < 5; ++round)
        for (const std::string& t : texts) out.push_back(tok.encode(t));
    });
  for (auto& t : threads) t.join();
  for (const auto& out : got)
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], expected[i % texts.size()]);
}

}  // namespace
}  // namespace kiln
