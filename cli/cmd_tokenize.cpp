// kiln tokenize: token ids of text as a translation or summarization bundle's tokenizer makes
// them (source side, or --target for the decoder's side), one line of ids per input line.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "kiln/kiln.h"

namespace kiln::cli {

Command add_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Token ids of text, as a text bundle's tokenizer makes them");
  struct Args {
    std::string bundle, input;
    std::vector<std::string> texts;
    bool target = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("bundle", a->bundle, "Bundle file")->required();
  cmd->add_option("texts", a->texts, "Texts (or use --input)");
  cmd->add_option("--input", a->input, "A file with one text a line");
  cmd->add_flag("--target", a->target, "Tokenize as the decoder's language (labels), not the source");
  return [a] {
    if (a->texts.empty() == a->input.empty())
      throw std::runtime_error("[tokenize] give texts or --input FILE (one of them)");
    std::unique_ptr<TextGenerator> t;
    Status s = TextGenerator::load(a->bundle, &t, "cpu");
    if (!s.ok()) throw std::runtime_error(s.message());
    const auto lines = a->input.empty() ? a->texts : read_lines(a->input);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::vector<int64_t> ids;
      s = t->tokenize(lines[i], a->target, &ids);
      if (!s.ok()) throw std::runtime_error(fmt::format("line {}: {}", i + 1, s.message()));
      fmt::print("{}\n", fmt::join(ids, " "));
    }
    return 0;
  };
}

}  // namespace kiln::cli
