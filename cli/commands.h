// Each `kiln` subcommand registers itself on the app and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace kiln::cli {

using Command = std::function<int()>;  // returns the exit status

Command add_build(CLI::App& app);
Command add_classify(CLI::App& app);
Command add_inspect(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_eval(CLI::App& app);
Command add_run(CLI::App& app);
Command add_study(CLI::App& app);

}  // namespace kiln::cli
