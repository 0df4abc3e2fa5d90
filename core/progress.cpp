#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln {

namespace {
bool progress_enabled() {
  if (const char* env = std::getenv("KILN_PROGRESS")) return std::strcmp(env, "0") != 0;
  return ::isatty(STDERR_FILENO) == 1;
}

std::string human(uint64_t n, bool bytes) {
  if (!bytes) return std::to_string(n);
  if (n >= (1u << 20)) return fmt::format("{:.1f} MiB", n / 1048576.0);
  if (n >= 1024) return fmt::format("{:.1f} KiB", n / 1024.0);
  return fmt::format("{} B", n);
}
}  // namespace

ProgressBar::ProgressBar(std::string label, uint64_t total, bool bytes)
    : label_(std::move(label)), total_(total), bytes_(bytes), enabled_(progress_enabled()) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done) {
  done_ = done;
  auto now = std::chrono::steady_clock::now();
  if (enabled_ && now - last_draw_ > std::chrono::milliseconds(100)) {
    last_draw_ = now;
    draw(false);
  }
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) draw(true);
}

void ProgressBar::draw(bool final) {
  const int width = 30;
  double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 0.0;
  if (frac > 1.0) frac = 1.0;
  int filled = static_cast<int>(frac * width);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string bar(filled, '#');
  bar.resize(width, '.');
  std::string counts =
      total_ ? fmt::format("{}/{}", human(done_, bytes_), human(total_, bytes_)) : human(done_, bytes_);
  std::fprintf(stderr, "\r%s [%s] %3d%% %s %.1fs%s", label_.c_str(), bar.c_str(), static_cast<int>(frac * 100),
               counts.c_str(), secs, final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace kiln
