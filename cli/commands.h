// Each `kiln` subcommand registers itself on the app and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::cli {

using Command = std::function<int()>;  // returns the exit status

// --device for a command that runs a bundle: cpu (the fast kernels), cpu-reference (the
// reference kernels, the spec the others are tested against), cuda, or auto (the GPU when there
// is one).
CLI::Option* add_device_option(CLI::App* cmd, std::string& device);

// "1,32,128" -> {1, 32, 128}; each from 1 to 4096. Throws "[command] --batch ..." otherwise.
std::vector<int> parse_batch_list(const std::string& text, const char* command);

// A text file's lines (a trailing CR dropped).
std::vector<std::string> read_lines(const std::string& path);
// Generates for `lines` in chunks with a progress bar, calling emit(line index, result) in
// input order; blank lines give empty results without running the model, invalid UTF-8 is an
// error naming the line.
void generate_lines(TextGenerator& t, const std::vector<std::string>& lines, GenerationOptions options,
                    const std::function<void(size_t, const GeneratedText&)>& emit);

Command add_build(CLI::App& app);
Command add_classify(CLI::App& app);
Command add_detect(CLI::App& app);
Command add_inspect(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_eval(CLI::App& app);
Command add_run(CLI::App& app);
Command add_study(CLI::App& app);
Command add_validate(CLI::App& app);
Command add_translate(CLI::App& app);
Command add_summarize(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_serve(CLI::App& app);

}  // namespace kiln::cli
