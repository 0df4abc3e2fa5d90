// Dynamic batching for one model version: requests queue (bounded), each engine instance's thread
// takes the oldest request and every queued request with the same admission key that fits, up to
// max_batch_size, waiting at most max_queue_delay_us for more, and runs them as one batch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "serve/servable.h"

namespace kiln::serve {

struct BatchingConfig {
  int max_batch_size = 0;                  // batch items per run; 0: the bundle's largest planned batch size
  int64_t max_queue_delay_us = 0;          // how long the oldest request waits for others to join it
  std::vector<int> preferred_batch_sizes;  // a batch that reaches one of these goes without waiting
  size_t max_queue_size = 1024;            // requests waiting; more are refused at once (Overloaded)
  int instances = 1;                       // engine instances, each with its own thread
  int64_t timeout_us = 0;                  // default time a request may wait in the queue (0: no limit)
};

using Clock = std::chrono::steady_clock;

class Batcher {
 public:
  Batcher(std::vector<std::unique_ptr<Servable>> instances, BatchingConfig config, Metrics* metrics, std::string model,
          std::string version);
  ~Batcher();

  const Servable& servable() const { return *instances_[0]; }
  const BatchingConfig& config() const { return config_; }
  const std::string& version() const { return version_; }

  // Admits a request and queues it; the future yields the requested outputs or throws ServeError.
  // Throws ServeError at once for a bad request (BadRequest), a full queue (Overloaded) or a
  // stopped batcher (Unavailable). The request's "timeout" parameter (microseconds) overrides the
  // configured one.
  std::future<std::vector<InferTensor>> submit(std::shared_ptr<const InferRequest> request);

  // Refuses new requests, finishes the queued ones and joins the threads. Idempotent.
  void stop();

 private:
  struct Entry {
    std::shared_ptr<const InferRequest> request;
    Admission admission;
    Clock::time_point enqueued, deadline;
    std::promise<std::vector<InferTensor>> promise;
  };
  // Throws Overloaded when the queue is full, Unavailable when stopping (and counts the refusal).
  void refuse_if_full();
  void refuse_if_full_locked();
  void work(Servable& instance);
  // Takes the next batch from the queue (the lock held), or waits until the oldest request's
  // delay is over or another arrives and returns none.
  std::vector<Entry> take(std::unique_lock<std::mutex>& lock);
  // Runs a batch; every request in it is answered once, whatever fails.
  void run(Servable& instance, std::vector<Entry>& batch);
  void run_batch(Servable& instance, std::vector<Entry>& batch, std::vector<bool>& answered);

  std::vector<std::unique_ptr<Servable>> instances_;
  BatchingConfig config_;
  Metrics* metrics_;
  std::string model_, version_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Entry> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kiln::serve
