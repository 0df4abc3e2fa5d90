// Each `kiln` subcommand registers itself on the app and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kiln::cli {

using Command = std::function<int()>;  // returns the exit status

// "1,32,128" -> {1, 32, 128}; each from 1 to 4096. Throws "[command] --batch ..." otherwise.
std::vector<int> parse_batch_list(const std::string& text, const char* command);

Command add_build(CLI::App& app);
Command add_classify(CLI::App& app);
Command add_inspect(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_eval(CLI::App& app);
Command add_run(CLI::App& app);
Command add_study(CLI::App& app);
Command add_validate(CLI::App& app);

}  // namespace kiln::cli
