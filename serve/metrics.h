// Prometheus metrics of the server, per model and version, rendered in the text exposition
// format at /metrics: requests by outcome, and histograms of the time a request waited for a
// preprocessing slot and spent preprocessing (decoding images) before it queued, queue time,
// compute time (per batch) and batch sizes.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::serve {

class Metrics {
 public:
  enum class Outcome { Success, Failure, Rejected };
  void request(const std::string& model, const std::string& version, Outcome outcome);
  // Before queueing: waiting for one of the server's preprocessing slots, then preprocessing.
  void admit_time(const std::string& model, const std::string& version, double wait_seconds, double preprocess_seconds);
  void queue_time(const std::string& model, const std::string& version, double seconds);
  void batch(const std::string& model, const std::string& version, int64_t size, double compute_seconds);
  std::string render() const;

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bound, not cumulative; the last is +Inf
    double sum = 0;
    uint64_t total = 0;
    explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1) {}
    void observe(double v);
  };
  struct Series {
    uint64_t success = 0, failure = 0, rejected = 0;
    Histogram admit_wait, preprocess, queue, compute, batch_size;
    Series();
  };
  Series& series(const std::string& model, const std::string& version);

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, Series> series_;
};

}  // namespace kiln::serve
