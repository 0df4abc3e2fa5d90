#include "serve/batcher.h"

#include <algorithm>
#include <semaphore>

namespace kiln::serve {

Batcher::Batcher(std::vector<std::unique_ptr<Servable>> instances, BatchingConfig config, Metrics* metrics,
                 std::string model, std::string version)
    : instances_(std::move(instances)),
      config_(std::move(config)),
      metrics_(metrics),
      model_(std::move(model)),
      version_(std::move(version)) {
  if (config_.max_batch_size <= 0) {
    const auto& sizes = instances_[0]->info().batch_sizes;
    config_.max_batch_size = sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end());
  }
  for (auto& instance : instances_) threads_.emplace_back([this, s = instance.get()] { work(*s); });
}

Batcher::~Batcher() { stop(); }

void Batcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

std::future<std::vector<InferTensor>> Batcher::submit(std::shared_ptr<const InferRequest> request) {
  const Servable& s = servable();
  for (const auto& want : request->outputs) {
    auto outs = s.outputs();
    if (std::none_of(outs.begin(), outs.end(), [&](const TensorMetadata& m) { return m.name == want.name; }))
      bad_request("the model has no output '" + want.name + "'");
  }
  // Refuse before admitting: admitting decodes images, work wasted on a request that cannot queue
  // (under overload it starved the batches that could run) or that is too large.
  refuse_if_full();
  if (s.leads_with_batch())
    for (const auto& in : request->inputs)
      if (!in.shape.empty() && in.shape[0] > config_.max_batch_size)
        bad_request("the request holds " + std::to_string(in.shape[0]) + " batch items, more than the model's " +
                    "max_batch_size " + std::to_string(config_.max_batch_size));
  Entry e;
  {
    // Admitting is CPU work (decoding, resizing): at most one per core at a time across the
    // server, so that a burst of requests does not starve the engine's threads.
    static std::counting_semaphore<4096> slots(std::clamp<int>(std::thread::hardware_concurrency(), 1, 4096));
    const auto arrived = Clock::now();
    slots.acquire();
    struct Release {
      ~Release() { slots.release(); }
    } release;
    const auto started = Clock::now();
    e.admission = s.admit(*request);
    metrics_->admit_time(model_, version_, std::chrono::duration<double>(started - arrived).count(),
                         std::chrono::duration<double>(Clock::now() - started).count());
  }
  if (e.admission.batch > config_.max_batch_size)
    bad_request("the request holds " + std::to_string(e.admission.batch) + " batch items, more than the model's " +
                "max_batch_size " + std::to_string(config_.max_batch_size));
  double timeout_us = number_parameter(*request, "timeout", static_cast<double>(config_.timeout_us));
  if (!(timeout_us >= 0 && timeout_us <= 3.6e9))
    bad_request("parameter 'timeout' must be from 0 to 3.6e9 microseconds");
  e.enqueued = Clock::now();
  e.deadline = timeout_us > 0 ? e.enqueued + std::chrono::microseconds(static_cast<int64_t>(timeout_us))
                              : Clock::time_point::max();
  e.request = std::move(request);
  auto future = e.promise.get_future();
  {
    std::lock_guard lock(mutex_);
    refuse_if_full_locked();
    queue_.push_back(std::move(e));
  }
  wake_.notify_all();
  return future;
}

void Batcher::refuse_if_full() {
  std::lock_guard lock(mutex_);
  refuse_if_full_locked();
}

void Batcher::refuse_if_full_locked() {
  if (!stopping_ && queue_.size() < config_.max_queue_size) return;
  metrics_->request(model_, version_, Metrics::Outcome::Rejected);
  if (stopping_) throw ServeError(ErrorKind::Unavailable, "model '" + model_ + "' is being unloaded");
  throw ServeError(ErrorKind::Overloaded,
                   "model '" + model_ + "' has " + std::to_string(queue_.size()) + " requests queued; try again later");
}

std::vector<Batcher::Entry> Batcher::take(std::unique_lock<std::mutex>& lock) {
  const Entry& first = queue_.front();
  // The queued requests that can join the oldest one, in arrival order.
  std::vector<size_t> picked = {0};
  int64_t items = first.admission.batch;
  if (first.admission.batchable)
    for (size_t i = 1; i < queue_.size() && items < config_.max_batch_size; ++i) {
      const Admission& a = queue_[i].admission;
      if (a.batchable && a.key == first.admission.key && items + a.batch <= config_.max_batch_size) {
        picked.push_back(i);
        items += a.batch;
      }
    }
  const auto& preferred = config_.preferred_batch_sizes;
  bool full = items >= config_.max_batch_size || !first.admission.batchable ||
              std::find(preferred.begin(), preferred.end(), items) != preferred.end();
  auto due = first.enqueued + std::chrono::microseconds(config_.max_queue_delay_us);
  if (!full && !stopping_ && Clock::now() < due) {
    wake_.wait_until(lock, due);
    return {};
  }
  std::vector<Entry> batch;
  for (size_t i : picked) batch.push_back(std::move(queue_[i]));
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) queue_.erase(queue_.begin() + *it);
  return batch;
}

void Batcher::work(Servable& instance) {
  for (;;) {
    std::vector<Entry> batch;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued request is answered
      batch = take(lock);
    }
    if (!batch.empty()) run(instance, batch);
  }
}

void Batcher::run(Servable& instance, std::vector<Entry>& batch) {
  // Every entry's promise is set once: by the answer, or by the error that stopped it.
  std::vector<bool> answered(batch.size());
  try {
    run_batch(instance, batch, answered);
  } catch (...) {
    for (size_t i = 0; i < batch.size(); ++i)
      if (!answered[i]) batch[i].promise.set_exception(std::current_exception());
  }
}

void Batcher::run_batch(Servable& instance, std::vector<Entry>& batch, std::vector<bool>& answered) {
  // A request's outcome is counted before it is answered: whoever sees the answer sees it counted.
  auto fail = [&](size_t i, std::exception_ptr error) {
    metrics_->request(model_, version_, Metrics::Outcome::Failure);
    answered[i] = true;
    batch[i].promise.set_exception(error);
  };
  const auto now = Clock::now();
  std::vector<size_t> live;
  for (size_t i = 0; i < batch.size(); ++i) {
    metrics_->queue_time(model_, version_, std::chrono::duration<double>(now - batch[i].enqueued).count());
    if (now > batch[i].deadline)
      fail(i, std::make_exception_ptr(
                  ServeError(ErrorKind::Timeout, "the request waited longer than its timeout in the queue")));
    else
      live.push_back(i);
  }
  if (live.empty()) return;
  std::vector<Work> work;
  int64_t items = 0;
  for (size_t i : live) {
    work.push_back({batch[i].request.get(), &batch[i].admission});
    items += batch[i].admission.batch;
  }
  std::vector<std::vector<InferTensor>> results;
  try {
    results = instance.run(work);
    if (results.size() != live.size())
      throw ServeError(ErrorKind::Internal, "the model answered " + std::to_string(results.size()) + " of " +
                                                std::to_string(live.size()) + " requests");
  } catch (...) {
    for (size_t i : live) fail(i, std::current_exception());
    return;
  }
  metrics_->batch(model_, version_, items, std::chrono::duration<double>(Clock::now() - now).count());
  for (size_t k = 0; k < live.size(); ++k) {
    const size_t i = live[k];
    std::vector<InferTensor> outputs;
    try {
      outputs = select_outputs(std::move(results[k]), *batch[i].request, instance.labels());
    } catch (...) {
      fail(i, std::current_exception());
      continue;
    }
    metrics_->request(model_, version_, Metrics::Outcome::Success);
    answered[i] = true;
    batch[i].promise.set_value(std::move(outputs));
  }
}

}  // namespace kiln::serve
