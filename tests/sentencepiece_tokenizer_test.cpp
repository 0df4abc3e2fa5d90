// Malformed SentencePiece models in a tokenizer config (the fixtures' real models are checked in
// families/marian/tests): each is a one-line error, never a crash inside the library.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace kiln
