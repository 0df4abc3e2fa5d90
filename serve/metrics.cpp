#include "serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::serve {
namespace {

const std::vector<double> kSecondsBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                             0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
const std::vector<double> kBatchBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256};

// A label value escaped as the exposition format says (backslash, quote, newline).
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void Metrics::Histogram::observe(double v) {
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
  ++counts[i];
  sum += v;
  ++total;
}

Metrics::Series::Series()
    : admit_wait(kSecondsBuckets),
      preprocess(kSecondsBuckets),
      queue(kSecondsBuckets),
      compute(kSecondsBuckets),
      batch_size(kBatchBuckets) {}

Metrics::Series& Metrics::series(const std::string& model, const std::string& version) {
  return series_.try_emplace({model, version}).first->second;
}

void Metrics::request(const std::string& model, const std::string& version, Outcome outcome) {
  std::lock_guard lock(mutex_);
  Series& s = series(model, version);
  ++(outcome == Outcome::Success ? s.success : outcome == Outcome::Failure ? s.failure : s.rejected);
}

void Metrics::admit_time(const std::string& model, const std::string& version, double wait_seconds,
                         double preprocess_seconds) {
  std::lock_guard lock(mutex_);
  Series& s = series(model, version);
  s.admit_wait.observe(wait_seconds);
  s.preprocess.observe(preprocess_seconds);
}

void Metrics::queue_time(const std::string& model, const std::string& version, double seconds) {
  std::lock_guard lock(mutex_);
  series(model, version).queue.observe(seconds);
}

void Metrics::batch(const std::string& model, const std::string& version, int64_t size, double compute_seconds) {
  std::lock_guard lock(mutex_);
  Series& s = series(model, version);
  s.batch_size.observe(static_cast<double>(size));
  s.compute.observe(compute_seconds);
}

std::string Metrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP kiln_requests_total Inference requests by outcome (rejected: queue full or server stopping).\n";
  out += "# TYPE kiln_requests_total counter\n";
  for (const auto& [key, s] : series_) {
    std::string labels = fmt::format("model=\"{}\",version=\"{}\"", escape(key.first), escape(key.second));
    out += fmt::format("kiln_requests_total{{{},outcome=\"success\"}} {}\n", labels, s.success);
    out += fmt::format("kiln_requests_total{{{},outcome=\"failure\"}} {}\n", labels, s.failure);
    out += fmt::format("kiln_requests_total{{{},outcome=\"rejected\"}} {}\n", labels, s.rejected);
  }
  auto histogram = [&](const char* name, const char* help, Histogram Series::*member) {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    for (const auto& [key, s] : series_) {
      std::string labels = fmt::format("model=\"{}\",version=\"{}\"", escape(key.first), escape(key.second));
      const Histogram& h = s.*member;
      uint64_t cumulative = 0;
      for (size_t i = 0; i < h.bounds.size(); ++i) {
        cumulative += h.counts[i];
        out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, h.bounds[i], cumulative);
      }
      out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, h.total);
      out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, h.sum, name, labels, h.total);
    }
  };
  histogram("kiln_preprocess_wait_seconds",
            "Time requests waited for a preprocessing slot (the server decodes at most one request per core at once).",
            &Series::admit_wait);
  histogram("kiln_preprocess_seconds", "Time requests took to decode and preprocess their inputs, before queueing.",
            &Series::preprocess);
  histogram("kiln_queue_seconds", "Time requests waited in the batch queue.", &Series::queue);
  histogram("kiln_compute_seconds", "Time a batch took to run (images are decoded before they queue).",
            &Series::compute);
  histogram("kiln_batch_size", "Batch items per model run.", &Series::batch_size);
  return out;
}

}  // namespace kiln::serve
