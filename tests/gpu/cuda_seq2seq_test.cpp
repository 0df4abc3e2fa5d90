// Encoder-decoder bundles of the test data's fixtures (a translation and a summarization
// model) generating on CUDA against transformers' references: fp32 must give the reference's
// token ids for every source, greedy and beam search; fp16 at least 95% of greedy and 90% of
// beam outputs (the rest are listed with where they part and kiln's score).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "tests/seq2seq_reference.h"
#include "tests/test_graphs.h"

namespace kiln {
namespace {

const std::vector<std::string> kFixtures = {"marian-tiny-en-de", "bart-tiny-lead"};

// Generates every reference source on the GPU; returns how many matched, printing the others.
int matches(TextGenerator& t, const test::Seq2SeqReference& ref, const std::string& key, int beams, int batch) {
  GenerationOptions o;
  if (beams > 0) o.num_beams = beams;  // else the bundle's own
  o.max_new_tokens = 64;
  o.batch = batch;
  std::vector<GeneratedText> out;
  const Status s = t.generate_ids(test::reference_sources(ref), o, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  int same = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto want = ref.json["examples"][i][key + "_ids"].get<std::vector<int64_t>>();
    if (out[i].ids == want) {
      ++same;
      continue;
    }
    size_t at = 0;
    while (at < want.size() && at < out[i].ids.size() && want[at] == out[i].ids[at]) ++at;
    std::printf("  %s source %zu: differs from token %zu on (kiln score %.5f)\n", key.c_str(), i, at, out[i].score);
  }
  return same;
}

TEST(CudaSeq2Seq, TeacherForcedLogitsMatchTransformers) {
  REQUIRE_GPU();
  for (const auto& f : kFixtures)
    for (const char* precision : {"fp32", "fp16"}) {
      test::Seq2SeqReference ref(f);
      std::unique_ptr<TextGenerator> t;
      ASSERT_TRUE(TextGenerator::load(test::seq2seq_bundle(f, precision), &t, "cuda").ok());
      double worst = 0;
      for (int i = 0; i < 8; ++i) worst = std::max(worst, test::teacher_forced_error(t->model(), ref, i).logits);
      std::printf("%s %s: teacher-forced logits within %.3g of transformers\n", f.c_str(), precision, worst);
      EXPECT_LT(worst, std::string(precision) == "fp32" ? 1e-3 : 0.1) << f << " " << precision;
    }
}

TEST(CudaSeq2Seq, Fp32GeneratesTheReferenceIds) {
  REQUIRE_GPU();
  for (const auto& f : kFixtures) {
    test::Seq2SeqReference ref(f);
    std::unique_ptr<TextGenerator> t;
    ASSERT_TRUE(TextGenerator::load(test::seq2seq_bundle(f, "fp32"), &t, "cuda").ok());
    EXPECT_EQ(matches(*t, ref, "greedy", 1, 16), 80) << f;
    EXPECT_EQ(matches(*t, ref, "default", 0, 16), 80) << f;
  }
}

TEST(CudaSeq2Seq, Fp16AgreesWithTheReference) {
  REQUIRE_GPU();
  for (const auto& f : kFixtures) {
    test::Seq2SeqReference ref(f);
    std::unique_ptr<TextGenerator> t;
    ASSERT_TRUE(TextGenerator::load(test::seq2seq_bundle(f, "fp16"), &t, "cuda").ok());
    const int greedy = matches(*t, ref, "greedy", 1, 16), beam = matches(*t, ref, "default", 0, 16);
    std::printf("%s fp16: greedy %d/80, beam %d/80 identical\n", f.c_str(), greedy, beam);
    EXPECT_GE(greedy, 76) << f;
    EXPECT_GE(beam, 72) << f;
  }
}

}  // namespace
}  // namespace kiln
