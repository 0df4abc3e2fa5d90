// The BART family against transformers on the bart-tiny-lead fixture (a small
// BartForConditionalGeneration trained to keep the first of three sentences, saved in the
// Hub's layout in fp16, with bart-large-cnn's generation settings): tokenizer, teacher-forced
// logits, greedy and beam search, one source at a time and batched.
#include <gtest/gtest.h>

#include "tests/seq2seq_reference.h"

namespace kiln::test {
namespace {

const char* kFixture = "bart-tiny-lead";

class Bart : public ::testing::Test {
 protected:
  void SetUp() override {
    Seq2SeqFixture& f = Seq2SeqFixture::get(kFixture);
    ASSERT_TRUE(f.generator) << f.error;
    ref_ = f.ref.get();
    generator_ = f.generator.get();
  }
  Seq2SeqReference* ref_ = nullptr;
  TextGenerator* generator_ = nullptr;
};

TEST_F(Bart, TokenizerMatchesTransformers) {
  for (const auto& c : ref_->json["tokenizer_checks"]) {
    std::vector<int64_t> ids;
    ASSERT_TRUE(generator_->tokenize(c["text"].get<std::string>(), false, &ids).ok());
    EXPECT_EQ(ids, c["ids"].get<std::vector<int64_t>>()) << c["text"];
  }
}

TEST_F(Bart, TeacherForcedLogitsMatchTransformers) {
  for (int i = 0; i < 8; ++i) {
    const TeacherForcedError e = teacher_forced_error(generator_->model(), *ref_, i);
    EXPECT_LT(e.encoder, 1e-4) << "encoder output of source " << i;
    EXPECT_LT(e.logits, 1e-3) << "logits of source " << i;
  }
}

TEST_F(Bart, GreedyMatchesTransformersOneByOneAndBatched) {
  GenerationOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 64;
  o.batch = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
  o.batch = 16;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "greedy", o), 80);
}

TEST_F(Bart, BeamSearchMatchesTransformersOneByOne) {
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 1;
  EXPECT_EQ(expect_generation(*generator_, *ref_, "default", o), 80);
}

TEST_F(Bart, BatchedBeamSearchMatchesTransformersBatch) {
  // transformers' batched run: the first 16 sources padded together.
  auto sources = reference_sources(*ref_);
  sources.resize(16);
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.batch = 5;  // fewer slots than sources: finished sources make room for the next
  std::vector<GeneratedText> out;
  ASSERT_TRUE(generator_->generate_ids(sources, o, &out).ok());
  const int64_t pad = 1;
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i].ids, strip_padding(ref_->json["batch16_default_ids"][i].get<std::vector<int64_t>>(), pad))
        << "source " << i;
}

}  // namespace
}  // namespace kiln::test
