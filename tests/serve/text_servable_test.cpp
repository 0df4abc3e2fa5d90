// A translation bundle (the small trained Marian model of the test data) behind kiln serve's text
// servable: requests merged into one batch get the texts kiln::TextGenerator gives for that batch;
// invalid UTF-8 and bad generation settings are refused when admitted.
#include <gtest/gtest.h>

#include "serve/batcher.h"
#include "tests/test_support.h"

namespace kiln::serve {
namespace {

const std::string& text_bundle() {
  static std::string path = [] {
    const std::string dir = test::process_dir("serve-text-test");
    BuildResult r;
    Status s = build(test::data_path("checkpoints/marian-tiny-en-de"), dir + "/mt.bundle", BuildOptions{}, &r);
    EXPECT_TRUE(s.ok()) << s.message();
    return dir + "/mt.bundle";
  }();
  return path;
}

std::shared_ptr<InferRequest> texts(std::vector<std::string> t, nlohmann::json parameters = nlohmann::json::object()) {
  auto r = std::make_shared<InferRequest>();
  const auto n = static_cast<int64_t>(t.size());
  r->inputs.push_back(bytes_tensor("text", {n}, std::move(t)));
  r->parameters = std::move(parameters);
  return r;
}

TEST(TextServable, MergedRequestsTranslateLikeTheTextGenerator) {
  const std::vector<std::string> sources = {"The house is small.", "I like green apples.", "Where is the station?"};
  std::vector<std::unique_ptr<Servable>> instances;
  instances.push_back(load_servable(text_bundle(), {"cpu", 1}));
  EXPECT_EQ(instances[0]->platform(), "kiln_translation");
  Metrics metrics;
  BatchingConfig config;
  config.max_batch_size = 8;
  config.max_queue_delay_us = 2'000'000;
  Batcher batcher(std::move(instances), config, &metrics, "mt", "1");
  auto a = batcher.submit(texts({sources[0], sources[1]}, {{"num_beams", 2}}));
  auto b = batcher.submit(texts({sources[2]}, {{"num_beams", 2}}));
  auto a_out = a.get(), b_out = b.get();
  EXPECT_NE(metrics.render().find("kiln_batch_size_count{model=\"mt\",version=\"1\"} 1"), std::string::npos);

  std::unique_ptr<TextGenerator> generator;
  ASSERT_TRUE(TextGenerator::load(text_bundle(), &generator, "cpu").ok());
  GenerationOptions o;
  o.num_beams = 2;
  o.batch = 3;
  std::vector<GeneratedText> expected;
  ASSERT_TRUE(generator->generate(sources, o, &expected).ok());
  ASSERT_EQ(a_out.size(), 1u);
  EXPECT_EQ(a_out[0].shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(a_out[0].strings, (std::vector<std::string>{expected[0].text, expected[1].text}));
  EXPECT_EQ(b_out[0].strings, (std::vector<std::string>{expected[2].text}));
  EXPECT_FALSE(expected[0].text.empty());
}

TEST(TextServable, RefusesInvalidUtf8AndSettingsWhenAdmitted) {
  auto servable = load_servable(text_bundle(), {"cpu", 1});
  auto refusal = [&](const InferRequest& r) {
    try {
      servable->admit(r);
    } catch (const ServeError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadRequest);
      return std::string(e.what());
    }
    return std::string("admitted");
  };
  EXPECT_EQ(refusal(*texts({"fine", "bad \xff byte"})), "text 1 is not valid UTF-8");
  EXPECT_EQ(refusal(*texts({"x"}, {{"num_beams", 1.5}})), "parameter 'num_beams' must be an integer from 1 to 16");
  EXPECT_EQ(refusal(*texts({"x"}, {{"num_beams", 0}})), "parameter 'num_beams' must be an integer from 1 to 16");
  EXPECT_EQ(refusal(*texts({"x"}, {{"max_new_tokens", 0}})),
            "parameter 'max_new_tokens' must be an integer from 1 to 4096");
  EXPECT_EQ(refusal(*texts({"x"}, {{"max_new_tokens", "9"}})), "parameter 'max_new_tokens' must be a number");
  EXPECT_EQ(refusal(*texts({"x"})), "admitted");
}

}  // namespace
}  // namespace kiln::serve
