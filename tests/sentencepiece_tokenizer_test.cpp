// Malformed SentencePiece models in a tokenizer config (the fixtures' real models are checked in
// families/marian/tests): each is a one-line error, never a crash inside the library.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <vector>

#include "core/base64.h"
#include "tasks/text/tokenizer.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

// A ModelProto of the given pieces (field 1: SentencePiece {1: text, 2: score 0.0}).
std::string model_proto(const std::vector<std::string>& pieces) {
  std::string proto;
  for (const std::string& p : pieces) {
    std::string piece = "\x0a" + std::string(1, static_cast<char>(p.size())) + p + std::string("\x15\0\0\0\0", 5);
    proto += "\x0a" + std::string(1, static_cast<char>(piece.size())) + piece;
  }
  return proto;
}

std::string varint(size_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>(0x80 | (v & 0x7f));
  return out + static_cast<char>(v);
}

// A normalisation map (uint32 trie size, trie units, replacements) as ModelProto field 3,
// NormalizerSpec field 2: a trie of 256 units; unit 0 is both where the walk starts (its offset
// gives the root node) and the value of the one leaf, byte 'a' under node 0; the replacements
// are "b\0".
std::string normalizer_spec(uint32_t unit0) {
  std::vector<uint32_t> units(256, 0);
  units[0] = unit0;
  units['a'] = (uint32_t{'a'} << 10) | (1u << 8) | 'a';  // label 'a', a leaf, child node 'a' ^ 'a' = 0
  std::string map(4 + units.size() * 4, '\0');
  const uint32_t trie_bytes = static_cast<uint32_t>(units.size() * 4);
  std::memcpy(map.data(), &trie_bytes, 4);
  std::memcpy(map.data() + 4, units.data(), trie_bytes);
  map += std::string("b\0", 2);
  const std::string spec = "\x12" + varint(map.size()) + map;
  return "\x1a" + varint(spec.size()) + spec;
}

std::string load_error(const std::string& proto) {
  const nlohmann::json config = {{"type", "sentencepiece"},
                                 {"source_model", base64_encode(proto)},
                                 {"target_model", base64_encode(proto)},
                                 {"vocab", {{"a", 0}}},
                                 {"eos", 0},
                                 {"unk", 0}};
  return test::error_message([&] { make_tokenizer(config); });
}

TEST(SentencePieceTokenizer, MalformedModelsAreOneLineErrors) {
  // An empty piece made the library abort while building its trie (found by tokenizer_fuzz).
  EXPECT_EQ(
      load_error(model_proto({"<unk>", "", "a"})),
      "[tokenizer] sentencepiece: source_model is not a SentencePiece model (malformed, or a piece without text)");
  // A length past the end of the bytes.
  EXPECT_EQ(
      load_error("\x0a\x40\x0a"),
      "[tokenizer] sentencepiece: source_model is not a SentencePiece model (malformed, or a piece without text)");
  EXPECT_NE(load_error("not a model").find("source_model is not a SentencePiece model"), std::string::npos);
}

TEST(SentencePieceTokenizer, CorruptNormalisationMapsAreRefusedBeforeTheLibraryReadsThem) {
  // The library follows trie offsets and replacement offsets unchecked: a fuzzed map made it read
  // past the buffer (tokenizer_fuzz). A leaf pointing past the replacements is refused...
  const std::string pieces = model_proto({"<unk>", "a"});
  EXPECT_EQ(load_error(pieces + normalizer_spec(0x80)),
            "[tokenizer] sentencepiece: source_model has a corrupt normalisation map");
  // ...and so is a root outside the array (unit 0's offset 1023, past its 256 units).
  EXPECT_EQ(load_error(pieces + normalizer_spec(0x3ff << 10)),
            "[tokenizer] sentencepiece: source_model has a corrupt normalisation map");
  // The same map with the leaf on "b\0" passes this check (what the library says of the rest
  // of this toy model is its own affair).
  EXPECT_EQ(load_error(pieces + normalizer_spec(0)).find("normalisation map"), std::string::npos);
}

}  // namespace
}  // namespace kiln
