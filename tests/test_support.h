// Helpers shared by kiln's tests: where the shared test data is, kiln's error messages, and
// numeric comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "backends/engine.h"
#include "core/error.h"
#include "core/tensor.h"

namespace kiln::test {

// The message of the kiln::Error that f() throws, or "" when it throws none.
template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// KILN_TEST_DATA, default ../shared next to the repository. Tests need it: a missing folder fails.
inline std::string data_dir() {
  if (const char* v = std::getenv("KILN_TEST_DATA"); v && *v) return v;
  return KILN_TEST_DATA_DEFAULT;
}
inline std::string data_path(const std::string& rel) { return data_dir() + "/" + rel; }

inline std::string binary_dir() { return KILN_BINARY_DIR; }
inline std::string source_dir() { return KILN_SOURCE_DIR; }

// A work folder of this process under the build folder, created: binary_dir()/name/<pid>. CTest
// runs tests as processes of their own, side by side, and two writing one file raced (one
// renamed or rewrote what the other had open or mapped).
inline std::string process_dir(const std::string& name) {
  const std::string dir = binary_dir() + "/" + name + "/" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

inline double rel_l2(const float* a, const float* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = static_cast<double>(a[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

inline std::vector<int> top_indices(const float* logits, int n, int k) {
  std::vector<int> idx(n);
  for (int i = 0; i < n; ++i) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  idx.resize(k);
  return idx;
}

// Runs an image model's graph ("pixels" [N, C, H, W] -> "logits") on NCHW floats; `taps` are
// named values to return after the logits.
inline std::vector<HostTensor> run_pixels(Engine& engine, const Tensor& pixels,
                                          const std::vector<std::string>& taps = {}) {
  return engine.run({HostTensor::from_f32("pixels", pixels.shape, pixels.data)}, taps);
}
inline std::vector<float> logits(Engine& engine, const Tensor& pixels) {
  return run_pixels(engine, pixels)[0].to_f32();
}

// Runs a shell command, returning its exit status and capturing stdout+stderr.
inline int run_command(const std::string& cmd, std::string* output) {
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  output->clear();
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace kiln::test
