// kiln: build checkpoints into bundles and run them. Every failure is one line on stderr,
// "kiln: error: [component] ...", and exit status 1 (2 for bad command-line usage).
#include <cstdio>
#include <map>

#include "cli/commands.h"

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
    return app.exit(e);
  }
  if (threads > 0) kiln::set_cpu_threads(threads);
  for (auto& [sub, run] : commands)
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kiln: error: %s\n", e.what());
        return 1;
      }
    }
  return 1;
}
