// kiln translate, tokenize and eval on the marian-tiny-en-de fixture: input order kept across
// batches, empty lines, over-long lines (truncated like transformers, with a note), invalid
// UTF-8 (a one-line error naming the line), JSON output, BLEU/chrF with sacreBLEU's signature,
// --profile's counts, and checkpoints that must be refused with a clear message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/seq2seq_reference.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

std::string kiln_bin() { return binary_dir() + "/bin/kiln"; }

std::string write(const std::string& name, const std::string& text) {
  const std::string path = (fs::temp_directory_path() / ("kiln-marian-cli-" + name)).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(MarianCli, TranslatesAFileInOrderWithEmptyAndOverlongLines) {
  const std::string bundle = seq2seq_bundle("marian-tiny-en-de");
  Seq2SeqReference ref("marian-tiny-en-de");
  std::string long_line;
  for (int i = 0; i < 400; ++i) long_line += "chat service window ";
  std::string input;
  for (int i = 0; i < 5; ++i) input += ref.json["examples"][i]["source"].get<std::string>() + "\n";
  input += "\n" + long_line + "\n";
  std::string out;
  ASSERT_EQ(run_command(kiln_bin() + " translate " + bundle + " --input " + write("in.txt", input) +
                            " --batch 2 --beams 1 --max-new-tokens 64 --device cpu --json",
                        &out),
            0)
      << out;
  std::stringstream lines(out);
  std::vector<nlohmann::json> rows;
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("kiln: note:", 0) == 0) {
      EXPECT_NE(l.find("line 7 is longer than the model takes"), std::string::npos) << l;
      continue;
    }
    rows.push_back(nlohmann::json::parse(l));
  }
  ASSERT_EQ(rows.size(), 7u) << out;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(rows[i]["text"], ref.json["examples"][i]["greedy_text"]) << i;
    EXPECT_EQ(rows[i]["ids"], ref.json["examples"][i]["greedy_ids"]) << i;
  }
  EXPECT_EQ(rows[5]["text"], "");
  EXPECT_NE(out.find("kiln: note: line 7"), std::string::npos) << out;
}

TEST(MarianCli, InvalidUtf8IsAOneLineErrorNamingTheLine) {
  const std::string bundle = seq2seq_bundle("marian-tiny-en-de");
  std::string out;
  EXPECT_EQ(run_command(kiln_bin() + " translate " + bundle + " --input " +
                            write("bad.txt", "Hello.\nbad \xC3\x28 byte\n") + " --device cpu",
                        &out),
            1);
  EXPECT_NE(out.find("kiln: error: [generate] line 2 is not valid UTF-8"), std::string::npos) << out;
}

TEST(MarianCli, TokenizeAndEvalReportSacrebleuSignatures) {
  const std::string bundle = seq2seq_bundle("marian-tiny-en-de");
  Seq2SeqReference ref("marian-tiny-en-de");
  std::string out;
  ASSERT_EQ(run_command(kiln_bin() + " tokenize " + bundle + " \"" +
                            ref.json["tokenizer_checks"][0]["text"].get<std::string>() + "\"",
                        &out),
            0);
  std::string want;
  for (const auto& id : ref.json["tokenizer_checks"][0]["ids"]) want += (want.empty() ? "" : " ") + id.dump();
  EXPECT_EQ(out, want + "\n");
  // The references are the model's own greedy outputs: BLEU and chrF must be 100.
  std::string src, tgt;
  for (int i = 0; i < 10; ++i) {
    src += ref.json["examples"][i]["source"].get<std::string>() + "\n";
    tgt += ref.json["examples"][i]["greedy_text"].get<std::string>() + "\n";
  }
  ASSERT_EQ(run_command(kiln_bin() + " eval " + bundle + " --source " + write("src.txt", src) + " --target " +
                            write("tgt.txt", tgt) + " --beams 1 --max-new-tokens 64 --device cpu --json",
                        &out),
            0)
      << out;
  const auto j = nlohmann::json::parse(out.substr(out.rfind('{')));
  EXPECT_NEAR(j["bleu"].get<double>(), 100.0, 1e-9);
  EXPECT_NEAR(j["chrf"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(j["bleu_signature"], "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3");
}

// --profile's rows per graph: calls, total ms, ms per call, setup ms, plans, planning ms, tuning
// ms. A first run plans each graph and makes the decoder's engine (the encoder's, the bundle's
// main graph, is made when the bundle loads); a run after a warm-up over the same lines makes
// neither.
TEST(MarianCli, EvalProfileCountsEnginesAndPlansMadeInTheTimedRun) {
  const std::string bundle = seq2seq_bundle("marian-tiny-en-de");
  Seq2SeqReference ref("marian-tiny-en-de");
  std::string src;
  for (int i = 0; i < 4; ++i) src += ref.json["examples"][i]["source"].get<std::string>() + "\n";
  const std::string file = write("profile.txt", src);
  struct Row {
    int64_t calls = 0, plans = 0;
    double setup_ms = 0;
  };
  const auto rows = [&](int warmup) {
    std::string out;
    EXPECT_EQ(run_command(kiln_bin() + " eval " + bundle + " --source " + file + " --target " + file +
                              " --beams 2 --max-new-tokens 8 --device cpu --profile --warmup " + std::to_string(warmup),
                          &out),
              0)
        << out;
    std::map<std::string, Row> by_graph;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      std::string graph;
      Row r;
      double total = 0, per_call = 0;
      if (f >> graph >> r.calls >> total >> per_call >> r.setup_ms >> r.plans) by_graph[graph] = r;
    }
    return by_graph;
  };
  const auto cold = rows(0);
  ASSERT_EQ(cold.count("encoder"), 1u);
  ASSERT_EQ(cold.size(), 2u) << "the encoder and one decoder graph";
  for (const auto& [graph, r] : cold) {
    EXPECT_GT(r.calls, 0) << graph;
    EXPECT_GE(r.plans, 1) << graph;
    if (graph != "encoder") EXPECT_GT(r.setup_ms, 0.0) << graph;
  }
  const auto warm = rows(4);
  ASSERT_EQ(warm.size(), 2u);
  for (const auto& [graph, r] : warm) {
    EXPECT_GT(r.calls, 0) << graph;
    EXPECT_EQ(r.setup_ms, 0.0) << graph;
    EXPECT_EQ(r.plans, 0) << graph;
  }
}

// A copy of the fixture with one file changed.
std::string variant(const std::string& name, const std::string& file, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("kiln-marian-" + name);
  fs::remove_all(dir);
  fs::copy(data_path("checkpoints/marian-tiny-en-de"), dir);
  fs::permissions(dir / file, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(dir / file, std::ios::binary | std::ios::trunc) << text;
  return dir.string();
}

TEST(MarianCli, ContradictoryLengthsAndAFolderAsInputAreRefused) {
  const std::string bundle = seq2seq_bundle("marian-tiny-en-de");
  std::string out;
  EXPECT_EQ(run_command(kiln_bin() + " translate " + bundle + " --min-new-tokens 5 --max-new-tokens 2 Hello.", &out),
            1);
  EXPECT_EQ(out, "kiln: error: [generate] min_new_tokens (5) is more than max_new_tokens (2)\n");
  const std::string folder = fs::temp_directory_path().string();
  EXPECT_EQ(run_command(kiln_bin() + " translate " + bundle + " --input " + folder, &out), 1);
  EXPECT_EQ(out, "kiln: error: [file] " + folder + " is a folder, not a file\n");
  // A pipe is read like a file.
  EXPECT_EQ(
      run_command("printf 'Hello.\\n' | " + kiln_bin() + " translate " + bundle + " --input /dev/stdin --json", &out),
      0)
      << out;
  EXPECT_NE(out.find("\"source\":\"Hello.\""), std::string::npos) << out;
}

TEST(MarianCli, UnsupportedConfigsAndGenerationSettingsAreNamed) {
  std::ifstream in(data_path("checkpoints/marian-tiny-en-de/config.json"));
  nlohmann::json config = nlohmann::json::parse(in);
  struct Case {
    std::string file, key;
    nlohmann::json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"config.json", "activation_function", "mish", "activation_function 'mish' is not supported"},
      {"config.json", "share_encoder_decoder_embeddings", false, "separate source and target vocabularies"},
      {"generation_config.json", "do_sample", true, "do_sample = true is not supported"},
      {"generation_config.json", "num_beam_groups", 2, "num_beam_groups = 2 is not supported"}};
  for (const auto& c : cases) {
    nlohmann::json j = c.file == "config.json" ? config : nlohmann::json::object({{"decoder_start_token_id", 5554}});
    j[c.key] = c.value;
    const std::string dir = variant(c.key, c.file, j.dump());
    std::string out;
    EXPECT_EQ(run_command(kiln_bin() + " build " + dir + " -o " + dir + "/x.bundle", &out), 1) << c.key;
    EXPECT_NE(out.find(c.message), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
}

}  // namespace
}  // namespace kiln::test
