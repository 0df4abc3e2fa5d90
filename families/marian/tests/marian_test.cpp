// The Marian family against transformers on the marian-tiny-en-de fixture (a small MarianMTModel
// trained on WMT22 en-de, saved in the Hub's layout): tokenizer, teacher-forced logits, greedy
// and beam search, one source at a time and batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "tests/seq2seq_reference.h"

namespace kiln::test {
namespace {

constexpr char kFixture[] = "marian-tiny-en-de";
using Marian = Seq2SeqTest<kFixture>;

TEST_F(Marian, TokenizerMatchesTransformers) { expect_tokenizer_checks(*generator_, *ref_); }

// Segmentations of equal score split as sentencepiece 0.2 (transformers' side) splits them:
// "...." as "." "..." and "000" as "0" "00" (transformers' ids for WMT22 en-ru line 1483, and
// the pieces of en-de line 362).
TEST_F(Marian, ExactScoreTiesSplitLikeSentencepieceTwo) {
  std::ifstream in(data_path("checkpoints/marian-tiny-en-de/vocab.json"));
  const nlohmann::json vocab = nlohmann::json::parse(in);
  std::map<int64_t, std::string> piece;
  for (const auto& [p, id] : vocab.items()) piece[id.get<int64_t>()] = p;
  auto pieces = [&](const std::string& text) {
    std::vector<int64_t> ids;
    EXPECT_TRUE(generator_->tokenize(text, false, &ids).ok());
    std::vector<std::string> out;
    for (int64_t id : ids) out.push_back(piece[id]);
    return out;
  };
  const auto told = pieces("I told ya so....");
  ASSERT_GE(told.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(told.end() - 3, told.end()), (std::vector<std::string>{".", "...", "</s>"}));
  const auto pounds = pieces("levels are £500, £1000 and £2500");
  const auto at = std::find(pounds.begin(), pounds.end(), "00");
  ASSERT_NE(at, pounds.end());
  EXPECT_EQ(*(at - 1), "0") << "1000 should be 1 0 00, not 1 00 0";
}

TEST_F(Marian, TeacherForcedLogitsMatchTransformers) {
  for (int i = 0; i < 8; ++i) {
    const TeacherForcedError e = teacher_forced_error(generator_->model(), *ref_, i);
    EXPECT_LT(e.encoder, 1e-4) << "encoder output of source " << i;
    EXPECT_LT(e.logits, 1e-3) << "logits of source " << i;
  }
}

TEST_F(Marian, GreedyMatchesTransformersOneByOneAndBatched) {
  GenerationOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 64;
  o.batch = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
  o.batch = 16;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
}

TEST_F(Marian, BeamSearchMatchesTransformersOneByOne) {
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "default", o), 80);
}

// A repetition penalty needs every logit on the host (not just each row's best tokens): one so
// close to 1 that it changes no choice takes that path and must still give the reference.
TEST_F(Marian, TheFullLogitsPathMatchesTransformersToo) {
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 8;
  o.repetition_penalty = 1.0 + 1e-6;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "default", o), 80);
  o.num_beams = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
}

TEST_F(Marian, BatchedBeamSearchMatchesTransformersBatch) {
  // transformers' batched run: the first 16 sources padded together.
  auto sources = reference_sources(*ref_);
  sources.resize(16);
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 5;  // fewer slots than sources: finished sources make room for the next
  std::vector<GeneratedText> out;
  ASSERT_TRUE(generator_->generate_ids(sources, o, &out).ok());
  const int64_t pad = 5554;
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i].ids, strip_padding(ref_->json["batch16_default_ids"][i].get<std::vector<int64_t>>(), pad))
        << "source " << i;
}

}  // namespace
}  // namespace kiln::test
