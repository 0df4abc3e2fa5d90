#include "serve/batcher.h"

#include <algorithm>

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
  Entry e;
  e.admission = s.admit(*request);
  if (e.admission.batch > config_.max_batch_size)
    bad_request("the request holds " + std::to_string(e.admission.batch) + " batch items, more than the model's " +
                "max_batch_size " + std::to_string(config_.max_batch_size));
  double timeout_us = number_parameter(*request, "timeout", static_cast<double>(config_.timeout_us));
  if (timeout_us < 0) bad_request("parameter 'timeout' must not be negative");
  e.enqueued = Clock::now();
  e.deadline = timeout_us > 0 ? e.enqueued + std::chrono::microseconds(static_cast<int64_t>(timeout_us))
                              : Clock::time_point::max();
  e.request = std::move(request);
  auto future = e.promise.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= config_.max_queue_size) {
      metrics_->request(model_, version_, Metrics::Outcome::Rejected);
      if (stopping_) throw ServeError(ErrorKind::Unavailable, "model '" + model_ + "' is being unloaded");
      throw ServeError(ErrorKind::Overloaded, "model '" + model_ + "' has " + std::to_string(queue_.size()) +
                                                  " requests queued; try again later");
    }
    queue_.push_back(std::move(e));
  }
  wake_.notify_all();
  return future;
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
  auto now = Clock::now();
  std::vector<Entry*> live;
  for (auto& e : batch) {
    metrics_->queue_time(model_, version_, std::chrono::duration<double>(now - e.enqueued).count());
    if (now > e.deadline) {
      metrics_->request(model_, version_, Metrics::Outcome::Failure);
      e.promise.set_exception(std::make_exception_ptr(
          ServeError(ErrorKind::Timeout, "the request waited longer than its timeout in the queue")));
      continue;
    }
    live.push_back(&e);
  }
  if (live.empty()) return;
  std::vector<Work> work;
  int64_t items = 0;
  for (Entry* e : live) {
    work.push_back({e->request.get(), &e->admission});
    items += e->admission.batch;
  }
  std::vector<std::vector<InferTensor>> results;
  try {
    results = instance.run(work);
  } catch (...) {
    auto error = std::current_exception();
    for (Entry* e : live) {
      metrics_->request(model_, version_, Metrics::Outcome::Failure);
      e->promise.set_exception(error);
    }
    return;
  }
  metrics_->batch(model_, version_, items, std::chrono::duration<double>(Clock::now() - now).count());
  for (size_t i = 0; i < live.size(); ++i) {
    Entry& e = *live[i];
    try {
      e.promise.set_value(select_outputs(std::move(results[i]), *e.request, instance.labels()));
      metrics_->request(model_, version_, Metrics::Outcome::Success);
    } catch (...) {
      metrics_->request(model_, version_, Metrics::Outcome::Failure);
      e.promise.set_exception(std::current_exception());
    }
  }
}

}  // namespace kiln::serve
