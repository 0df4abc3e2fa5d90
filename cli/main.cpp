// kiln: build checkpoints into bundles and run them. Every failure is one line on stderr,
// "kiln: error: [component] ...", and exit status 1 (2 for bad command-line usage).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"

namespace {

// One line, whatever the message holds: control characters (a newline in a file name or in a
// label read from a file) are written as escapes.
void print_error(const std::string& message) {
  std::string line;
  for (unsigned char c : message) {
    if (c == '\n')
      line += "\\n";
    else if (c < 0x20 || c == 0x7f)
      line += fmt::format("\\x{:02x}", c);
    else
      line += static_cast<char>(c);
  }
  std::fprintf(stderr, "kiln: error: %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln: build Hugging Face / timm checkpoints into self-contained bundles and run them"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kiln " KILN_VERSION);
  // Accepted before or after the command (subcommands made after fallthrough() pass options
  // they do not know to the app).
  int threads = 0;
  app.add_option("--threads", threads, "CPU threads (default: the physical cores kiln may use, or OMP_NUM_THREADS)")
      ->check(CLI::Range(1, 4096));
  app.fallthrough();
  std::map<CLI::App*, kiln::cli::Command> commands;
  for (auto add :
       {kiln::cli::add_build, kiln::cli::add_classify, kiln::cli::add_detect, kiln::cli::add_inspect,
        kiln::cli::add_eval, kiln::cli::add_bench, kiln::cli::add_run, kiln::cli::add_study, kiln::cli::add_validate,
        kiln::cli::add_translate, kiln::cli::add_summarize, kiln::cli::add_tokenize, kiln::cli::add_serve}) {
    size_t before = app.get_subcommands({}).size();
    auto run = add(app);
    commands[app.get_subcommands({})[before]] = run;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string what = e.what();
    // The first word that is not an option (nor --threads' value) names the command.
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--threads") {
        ++i;
      } else if (arg.empty() || arg[0] != '-') {
        if (std::find(names.begin(), names.end(), arg) == names.end())
          what = fmt::format("unknown command '{}' (commands: {})", arg, fmt::join(names, ", "));
        break;
      }
    }
    print_error(what + " (kiln --help says how to use it)");
    return 2;
  }
  if (threads > 0) kiln::set_cpu_threads(threads);
  for (auto& [sub, run] : commands)
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        print_error(e.what());
        return 1;
      }
    }
  return 1;
}
