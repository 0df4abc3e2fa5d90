// Checks of an encoder-decoder bundle against transformers' reference outputs for a fixture
// (reference/<fixture>.reference.json and .safetensors in the test data, made by
// reference/make_seq2seq_fixtures.py): tokenizer ids, teacher-forced logits and encoder
// outputs, greedy and default (beam search) generation one source at a time and batched.
// Families' tests call these with their fixture's name.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "checkpoints/safetensors.h"
#include "kiln/kiln.h"
#include "tests/test_support.h"

namespace kiln::test {

struct Seq2SeqReference {
  nlohmann::json json;
  std::unique_ptr<SafetensorsFile> tensors;

  explicit Seq2SeqReference(const std::string& fixture) {
    std::ifstream in(data_path("reference/" + fixture + ".reference.json"));
    EXPECT_TRUE(in.good()) << "missing reference for " << fixture;
    json = nlohmann::json::parse(in);
    tensors = std::make_unique<SafetensorsFile>(data_path("reference/" + fixture + ".reference.safetensors"));
  }
  std::vector<int64_t> ids(const std::string& name) const {
    HostTensor t = tensors->to_host(name);
    return {t.as<int64_t>(), t.as<int64_t>() + t.numel()};
  }
};

// A path in the temporary folder under a name of this process (tests run in parallel must not
// read each other's half-written files), removed when the process ends.
inline std::string process_temp_file(const std::string& name) {
  struct Files {
    std::set<std::string> paths;
    ~Files() {
      std::error_code ec;
      for (const auto& p : paths) std::filesystem::remove(p, ec);
    }
  };
  static Files files;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("kiln-test-" + std::to_string(getpid()) + "-" + name)).string();
  files.paths.insert(path);
  return path;
}

// Builds the checkpoint (folder under checkpoints/ of the test data) once per test process.
inline std::string seq2seq_bundle(const std::string& checkpoint, const std::string& precision = "fp32") {
  static std::set<std::string> built;
  const std::string out = process_temp_file(checkpoint + "-" + precision + ".bundle");
  if (built.insert(out).second) {
    BuildOptions o;
    o.precision = precision;
    BuildResult r;
    const Status s = build(data_path("checkpoints/" + checkpoint), out, o, &r);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return out;
}

// An FP8 bundle of the checkpoint (the family's default recipe) calibrated on `sentences`.
inline std::string seq2seq_fp8_bundle(const std::string& checkpoint, const std::vector<std::string>& sentences) {
  const std::string calib = process_temp_file(checkpoint + "-fp8.txt");
  const std::string out = process_temp_file(checkpoint + "-fp8.bundle");
  {
    std::ofstream f(calib);
    for (const auto& s : sentences) f << s << "\n";
  }
  BuildOptions o;
  o.precision = "fp8";
  o.calib = calib;
  o.calib_samples = sentences.size();
  BuildResult r;
  const Status s = build(data_path("checkpoints/" + checkpoint), out, o, &r);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// A fixture's reference and CPU generator, loaded once per process by the first test that asks;
// a bundle that does not build or load fails every test (a failure in SetUpTestSuite would
// report them as skipped).
struct Seq2SeqFixture {
  std::unique_ptr<Seq2SeqReference> ref;
  std::unique_ptr<TextGenerator> generator;
  std::string error;

  static Seq2SeqFixture& get(const std::string& fixture) {
    static std::map<std::string, Seq2SeqFixture> loaded;
    auto [it, fresh] = loaded.try_emplace(fixture);
    if (fresh) {
      it->second.ref = std::make_unique<Seq2SeqReference>(fixture);
      const Status s = TextGenerator::load(seq2seq_bundle(fixture), &it->second.generator, "cpu");
      if (!s.ok()) it->second.error = s.message();
    }
    return it->second;
  }
};

// A family's test fixture: Seq2SeqTest<kName> gives each test the reference and CPU generator
// of fixture kName (a namespace-scope char array), asserting in SetUp that it loaded.
template <const char* kName>
class Seq2SeqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Seq2SeqFixture& f = Seq2SeqFixture::get(kName);
    ASSERT_TRUE(f.generator) << f.error;
    ref_ = f.ref.get();
    generator_ = f.generator.get();
  }
  Seq2SeqReference* ref_ = nullptr;
  TextGenerator* generator_ = nullptr;
};

// The reference's tokenizer checks: each text's source-side ids exactly.
inline void expect_tokenizer_checks(TextGenerator& t, const Seq2SeqReference& ref) {
  for (const auto& c : ref.json["tokenizer_checks"]) {
    std::vector<int64_t> ids;
    ASSERT_TRUE(t.tokenize(c["text"].get<std::string>(), false, &ids).ok());
    EXPECT_EQ(ids, c["ids"].get<std::vector<int64_t>>()) << c["text"];
  }
}

// transformers pads batched outputs with the pad token after EOS; kiln returns each sequence
// alone.
inline std::vector<int64_t> strip_padding(std::vector<int64_t> ids, int64_t pad) {
  while (ids.size() > 1 && ids.back() == pad) ids.pop_back();
  return ids;
}

inline std::vector<std::vector<int64_t>> reference_sources(const Seq2SeqReference& ref) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& e : ref.json["examples"]) out.push_back(e["source_ids"].get<std::vector<int64_t>>());
  return out;
}

// Source i of the reference through the encoder (batch 1) and the decoder_step graph, teacher-forced
// with its decoder_input_ids: the largest |difference| from transformers' encoder output and
// logits; infinity where a run fails or gives the wrong number of values.
struct TeacherForcedError {
  double encoder = 0, logits = 0;
};
inline TeacherForcedError teacher_forced_error(Model& m, const Seq2SeqReference& ref, int i) {
  constexpr double kFailed = std::numeric_limits<double>::infinity();
  const std::string at = std::to_string(i);
  const auto src = ref.ids("source_ids." + at), dec = ref.ids("decoder_input_ids." + at);
  const int64_t n = static_cast<int64_t>(src.size());
  std::vector<int64_t> positions(src.size());
  for (int64_t p = 0; p < n; ++p) positions[p] = p;
  const HostTensor memory = HostTensor::zeros("memory_capacity", DType::I64, {n});
  m.reset_states();
  std::vector<HostTensor> out;
  Status s = m.run({HostTensor::from_i64("ids", {1, n}, src), HostTensor::from_i64("positions", {n}, positions),
                    HostTensor::from_i64("length", {1}, {n}), HostTensor::from_i64("slots", {1}, {0}), memory},
                   &out, "encoder");
  EXPECT_TRUE(s.ok()) << "encoder: " << s.message();
  const Tensor hidden = ref.tensors->to_float("encoder_out." + at), logits = ref.tensors->to_float("logits." + at);
  TeacherForcedError e;
  e.encoder = s.ok() && out[0].numel() == hidden.numel()
                  ? max_abs_diff(out[0].as<float>(), hidden.data.data(), hidden.data.size())
                  : kFailed;
  const int64_t vocab = logits.dim(1);
  for (int64_t p = 0; p < static_cast<int64_t>(dec.size()); ++p) {
    s = m.run(
        {HostTensor::from_i64("ids", {1, 1}, {dec[p]}), HostTensor::from_i64("position", {1}, {p}),
         HostTensor::from_i64("length", {1}, {p + 1}), HostTensor::from_i64("source_length", {1}, {n}),
         HostTensor::zeros("slot_capacity", DType::I64, {1}), HostTensor::zeros("cross_rows", DType::I32, {1, n}),
         HostTensor::zeros("cache_capacity", DType::I64, {16}), HostTensor::zeros("cache_rows", DType::I32, {1, 16})},
        &out, "decoder_step");
    EXPECT_TRUE(s.ok()) << "decoder_step: " << s.message();
    if (!s.ok() || out[0].numel() != vocab) return {e.encoder, kFailed};
    e.logits = std::max(e.logits, max_abs_diff(out[0].as<float>(), logits.data.data() + p * vocab, vocab));
  }
  return e;
}

// Generation from the reference's source ids with `options`; every output's ids and text
// must equal the reference's `key` ("greedy" or "default"). Returns how many matched.
inline int expect_generation(TextGenerator& t, const Seq2SeqReference& ref, const std::string& key,
                             const GenerationOptions& options) {
  std::vector<GeneratedText> out;
  const Status s = t.generate_ids(reference_sources(ref), options, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  int same = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& e = ref.json["examples"][i];
    const bool ids_equal = out[i].ids == e[key + "_ids"].get<std::vector<int64_t>>();
    EXPECT_TRUE(ids_equal) << key << " ids differ for source " << i << ": " << e["source"];
    EXPECT_EQ(out[i].text, e[key + "_text"].get<std::string>()) << key << " text of source " << i;
    same += ids_equal;
  }
  return same;
}

// Lines [first, last) of a WMT22 text file of the test data.
inline std::vector<std::string> wmt22_lines(const std::string& file, int first, int last) {
  std::ifstream in(data_path("data/text/" + file));
  EXPECT_TRUE(in.good()) << file;
  std::vector<std::string> out;
  std::string line;
  for (int i = 0; i < last && std::getline(in, line); ++i)
    if (i >= first) out.push_back(line);
  return out;
}

// How many of the reference's sources [first, last) generate exactly the reference's `key` ids.
inline int matching_generations(TextGenerator& t, const Seq2SeqReference& ref, const std::string& key,
                                const GenerationOptions& options, size_t first, size_t last) {
  std::vector<GeneratedText> out;
  const Status s = t.generate_ids(reference_sources(ref), options, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  int same = 0;
  for (size_t i = first; i < last && i < out.size(); ++i)
    same += out[i].ids == ref.json["examples"][i][key + "_ids"].get<std::vector<int64_t>>();
  return same;
}

// An FP8 bundle of the fixture calibrated on `sentences`, on the CPU (whose emulation is the
// GPU's FP8 arithmetic), against transformers' fp32 references: the first 8 sources'
// teacher-forced logits within `logit_error`, and greedy outputs identical for at least
// `min_seen` of the 40 training sentences among the sources and `min_unseen` of the 40 others.
inline void expect_fp8_close(const std::string& fixture, const std::vector<std::string>& sentences, double logit_error,
                             int min_seen, int min_unseen) {
  const Seq2SeqReference ref(fixture);
  std::unique_ptr<TextGenerator> fp8;
  ASSERT_TRUE(TextGenerator::load(seq2seq_fp8_bundle(fixture, sentences), &fp8, "cpu").ok());
  for (int i = 0; i < 8; ++i)
    EXPECT_LT(teacher_forced_error(fp8->model(), ref, i).logits, logit_error) << "logits of source " << i;
  GenerationOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 64;
  o.batch = 16;
  EXPECT_GE(matching_generations(*fp8, ref, "greedy", o, 0, 40), min_seen);
  EXPECT_GE(matching_generations(*fp8, ref, "greedy", o, 40, 80), min_unseen);
}

}  // namespace kiln::test
