// kiln translate / kiln summarize: text through an encoder-decoder bundle. Sources come from the
// command line or a file (one a line), stream through the model a chunk at a time and print in
// input order. Empty lines give empty outputs without running the model.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "cli/commands.h"
#include "core/progress.h"
#include "core/read_file.h"
#include "kiln/kiln.h"
#include "tasks/text/tokenizer.h"

namespace kiln::cli {

namespace {

struct GenerateArgs {
  std::string bundle, input;
  std::vector<std::string> texts;
  std::optional<int> beams;
  std::optional<int64_t> max_new_tokens, min_new_tokens;
  int batch = 32;
  std::string device = "auto";
  bool json = false;
};

void add_generation_options(CLI::App* cmd, GenerateArgs& a) {
  cmd->add_option("--beams", a.beams, "Beam size (default: the bundle's generation config)")->check(CLI::Range(1, 64));
  cmd->add_option("--max-new-tokens", a.max_new_tokens, "Most tokens to generate per source")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--min-new-tokens", a.min_new_tokens, "No end of sequence before this many tokens")
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--batch", a.batch, "Sources decoded at once (each with its beams)")->check(CLI::Range(1, 4096));
  add_device_option(cmd, a.device);
}

GenerationOptions options_of(const GenerateArgs& a) {
  GenerationOptions o;
  o.num_beams = a.beams;
  o.max_new_tokens = a.max_new_tokens;
  o.min_new_tokens = a.min_new_tokens;
  o.batch = a.batch;
  return o;
}

std::unique_ptr<TextGenerator> load(const GenerateArgs& a) {
  std::unique_ptr<TextGenerator> t;
  const Status s = TextGenerator::load(a.bundle, &t, a.device);
  if (!s.ok()) throw std::runtime_error(s.message());
  return t;
}

}  // namespace

std::vector<std::string> read_lines(const std::string& path) {
  std::istringstream in(read_file(path, kMaxTextFileBytes));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

void generate_lines(TextGenerator& t, const std::vector<std::string>& lines, GenerationOptions o,
                    const std::function<void(size_t, const GeneratedText&)>& emit) {
  ProgressBar progress("generate", lines.size());
  o.on_done = [&](size_t) { progress.advance(); };
  const size_t chunk = static_cast<size_t>(o.batch) * 8;
  for (size_t begin = 0; begin < lines.size(); begin += chunk) {
    const size_t end = std::min(lines.size(), begin + chunk);
    std::vector<std::string> sources;
    std::vector<size_t> where;
    for (size_t i = begin; i < end; ++i)
      if (!valid_utf8(lines[i])) {
        throw std::runtime_error(fmt::format("[generate] line {} is not valid UTF-8", i + 1));
      } else if (!blank(lines[i])) {
        sources.push_back(lines[i]);
        where.push_back(i);
      } else {
        progress.advance();
      }
    std::vector<GeneratedText> out;
    if (!sources.empty()) {
      const Status s = t.generate(sources, o, &out);
      if (!s.ok()) throw std::runtime_error(s.message());
    }
    size_t next = 0;
    for (size_t i = begin; i < end; ++i) {
      if (next < where.size() && where[next] == i) {
        if (out[next].truncated)
          fmt::print(stderr,
                     "kiln: note: line {} is longer than the model takes; its end was cut, as transformers "
                     "does with truncation\n",
                     i + 1);
        emit(i, out[next++]);
      } else {
        emit(i, GeneratedText{});
      }
    }
  }
  progress.finish();
}

namespace {

Command add_generate(CLI::App& app, const char* name, const char* help) {
  auto* cmd = app.add_subcommand(name, help);
  auto a = std::make_shared<GenerateArgs>();
  cmd->add_option("bundle", a->bundle, "Bundle file")->required();
  cmd->add_option("texts", a->texts, "Texts (or use --input)");
  cmd->add_option("--input", a->input, "A file with one source a line");
  add_generation_options(cmd, *a);
  cmd->add_flag("--json", a->json, "One JSON object a line: source, text, ids, score");
  return [a] {
    if (a->texts.empty() == a->input.empty())
      throw std::runtime_error("[generate] give texts or --input FILE (one of them)");
    auto t = load(*a);
    const std::vector<std::string> lines = a->input.empty() ? a->texts : read_lines(a->input);
    generate_lines(*t, lines, options_of(*a), [&](size_t i, const GeneratedText& r) {
      if (a->json)
        fmt::print("{}\n",
                   nlohmann::json{{"source", lines[i]}, {"text", r.text}, {"ids", r.ids}, {"score", r.score}}.dump(
                       -1, ' ', false, nlohmann::json::error_handler_t::replace));
      else
        fmt::print("{}\n", r.text);
      std::fflush(stdout);
    });
    return 0;
  };
}

}  // namespace

Command add_translate(CLI::App& app) {
  return add_generate(app, "translate", "Translate text with a translation bundle");
}

Command add_summarize(CLI::App& app) {
  return add_generate(app, "summarize", "Summarize text with a summarization bundle");
}

}  // namespace kiln::cli
