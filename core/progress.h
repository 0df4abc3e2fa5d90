// A one-line progress bar on stderr for long work (downloads, builds, evaluation). It draws only
// when stderr is a terminal (or KILN_PROGRESS=1), so logs and pipes stay clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace kiln {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total, bool bytes = false);
  ~ProgressBar();
  void update(uint64_t done);
  void advance(uint64_t n = 1) { update(done_ + n); }
  void finish();

 private:
  void draw(bool final);
  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool bytes_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace kiln
