// Errors inside kiln are exceptions carrying one line that names where it happened, e.g.
// "[safetensors] model.safetensors: tensor 'x' ends past the file". The public API and the CLI
// turn them into a kiln::Status / one stderr line and a non-zero exit.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kiln

// Checks a condition that depends on input (files, arguments); internal invariants use assert.
#define KILN_CHECK(cond, ...)               \
  do {                                      \
    if (!(cond)) ::kiln::fail(__VA_ARGS__); \
  } while (0)
