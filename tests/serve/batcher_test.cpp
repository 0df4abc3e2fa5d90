// The dynamic batcher with a servable that records the batches it runs: requests merge up to
// max_batch_size and only with their own kind, a full queue refuses at once, a stop answers what
// was queued, a bad request is refused alone, and no request is answered twice or lost.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "serve/batcher.h"

namespace kiln::serve {
namespace {

// Echoes input "x" (INT32 [n]) plus 1; records the batch sizes; a request whose first element is
// -1 is refused when admitted, one with -2 fails the whole batch it runs in.
class RecordingServable : public Servable {
 public:
  RecordingServable(std::chrono::milliseconds work) : work_(work) { info_.batch_sizes = {1, 8}; }
  std::string platform() const override { return "test"; }
  std::vector<TensorMetadata> inputs() const override { return {{"x", "INT32", {-1}}}; }
  std::vector<TensorMetadata> outputs() const override { return {{"y", "INT32", {-1}}}; }
  const ModelInfo& info() const override { return info_; }
  Admission admit(const InferRequest& r) const override {
    const InferTensor* x = r.input("x");
    if (!x || x->datatype != "INT32" || x->shape.size() != 1) bad_request("need x");
    if (x->shape[0] > 0 && reinterpret_cast<const int32_t*>(x->data.data())[0] == -1) bad_request("bad item");
    return {x->shape[0], r.parameters.value("kind", std::string("a")), r.parameters.value("batchable", true), {}};
  }
  std::vector<std::vector<InferTensor>> run(const std::vector<Work>& batch) override {
    ++started;
    std::this_thread::sleep_for(work_);
    int64_t items = 0;
    std::vector<std::vector<InferTensor>> out;
    for (const Work& w : batch) {
      const InferTensor& x = *w.request->input("x");
      items += w.admission->batch;
      std::vector<int32_t> v(x.data.size() / 4);
      std::memcpy(v.data(), x.data.data(), x.data.size());
      if (!v.empty() && v[0] == -2) throw ServeError(ErrorKind::Internal, "the engine failed");
      for (auto& e : v) ++e;
      out.push_back({int32_tensor("y", x.shape, v)});
    }
    std::lock_guard lock(mutex);
    batches.push_back(items);
    return out;
  }
  std::mutex mutex;
  std::vector<int64_t> batches;
  std::atomic<int> started{0};

 private:
  std::chrono::milliseconds work_;
  ModelInfo info_;
};

std::shared_ptr<InferRequest> request(std::vector<int32_t> x, nlohmann::json parameters = nlohmann::json::object()) {
  auto r = std::make_shared<InferRequest>();
  r->inputs.push_back(int32_tensor("x", {static_cast<int64_t>(x.size())}, x));
  r->parameters = std::move(parameters);
  return r;
}

std::vector<int32_t> y_of(const std::vector<InferTensor>& outputs) {
  std::vector<int32_t> v(outputs.at(0).data.size() / 4);
  std::memcpy(v.data(), outputs.at(0).data.data(), outputs.at(0).data.size());
  return v;
}

struct Fixture {
  RecordingServable* servable;
  Metrics metrics;
  std::unique_ptr<Batcher> batcher;
  Fixture(BatchingConfig config, std::chrono::milliseconds work = std::chrono::milliseconds(0)) {
    auto s = std::make_unique<RecordingServable>(work);
    servable = s.get();
    std::vector<std::unique_ptr<Servable>> instances;
    instances.push_back(std::move(s));
    batcher = std::make_unique<Batcher>(std::move(instances), config, &metrics, "m", "1");
  }
};

TEST(Batcher, MergesWaitingRequestsUpToTheMaximum) {
  BatchingConfig c;
  c.max_queue_delay_us = 1'500'000;  // the first request waits for the others
  Fixture f(c);                      // max_batch_size 0: the servable's largest planned batch, 8
  EXPECT_EQ(f.batcher->config().max_batch_size, 8);
  std::vector<std::future<std::vector<InferTensor>>> futures;
  for (int i = 0; i < 5; ++i) futures.push_back(f.batcher->submit(request({i * 10, i * 10 + 1})));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y_of(futures[i].get()), (std::vector<int32_t>{i * 10 + 1, i * 10 + 2}));
  // 10 items in batches of at most 8, whole requests only: 8 then 2.
  EXPECT_EQ(f.servable->batches, (std::vector<int64_t>{8, 2}));
  const std::string m = f.metrics.render();
  EXPECT_NE(m.find("kiln_batch_size_bucket{model=\"m\",version=\"1\",le=\"8\"} 2"), std::string::npos) << m;
  // Every admitted request's slot wait and preprocessing time, once each.
  EXPECT_NE(m.find("kiln_preprocess_wait_seconds_count{model=\"m\",version=\"1\"} 5\n"), std::string::npos) << m;
  EXPECT_NE(m.find("kiln_preprocess_seconds_count{model=\"m\",version=\"1\"} 5\n"), std::string::npos) << m;
}

TEST(Batcher, OnlyRequestsWithTheSameKeyShareABatch) {
  BatchingConfig c;
  c.max_queue_delay_us = 1'000'000;
  Fixture f(c);
  auto a1 = f.batcher->submit(request({1}));
  auto b1 = f.batcher->submit(request({2}, {{"kind", "b"}}));
  auto a2 = f.batcher->submit(request({3}));
  auto alone = f.batcher->submit(request({4}, {{"batchable", false}}));
  EXPECT_EQ(y_of(a1.get()), (std::vector<int32_t>{2}));
  EXPECT_EQ(y_of(b1.get()), (std::vector<int32_t>{3}));
  EXPECT_EQ(y_of(a2.get()), (std::vector<int32_t>{4}));
  EXPECT_EQ(y_of(alone.get()), (std::vector<int32_t>{5}));
  EXPECT_EQ(f.servable->batches, (std::vector<int64_t>{2, 1, 1}));
}

TEST(Batcher, ABadRequestIsRefusedAloneAndABatchErrorFailsItsBatch) {
  BatchingConfig c;
  c.max_queue_delay_us = 1'000'000;
  Fixture f(c);
  auto good = f.batcher->submit(request({5}));
  try {
    f.batcher->submit(request({-1}));
    ADD_FAILURE() << "accepted";
  } catch (const ServeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadRequest);
    EXPECT_STREQ(e.what(), "bad item");
  }
  EXPECT_EQ(y_of(good.get()), (std::vector<int32_t>{6}));
  auto x = f.batcher->submit(request({7}));
  auto y = f.batcher->submit(request({-2}));
  EXPECT_THROW(x.get(), ServeError);
  EXPECT_THROW(y.get(), ServeError);
  EXPECT_EQ(f.servable->batches, (std::vector<int64_t>{1}));  // the failed batch recorded nothing
  std::string m = f.metrics.render();
  EXPECT_NE(m.find("outcome=\"success\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("outcome=\"failure\"} 2\n"), std::string::npos) << m;
}

TEST(Batcher, RefusesWhatItCannotTakeAtOnce) {
  BatchingConfig c;
  c.max_batch_size = 4;
  c.max_queue_size = 2;
  Fixture f(c, std::chrono::milliseconds(500));
  auto expect_refusal = [&](std::shared_ptr<InferRequest> r, ErrorKind kind) {
    try {
      f.batcher->submit(r);
      ADD_FAILURE() << "accepted";
    } catch (const ServeError& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
    }
  };
  expect_refusal(request({1, 2, 3, 4, 5}), ErrorKind::BadRequest);  // more than max_batch_size
  auto r = std::make_shared<InferRequest>();
  r->inputs.push_back(int32_tensor("x", {1}, {1}));
  r->outputs.push_back({"z", false, 0});
  expect_refusal(r, ErrorKind::BadRequest);  // no such output
  // The first runs (500 ms), two wait, the fourth finds the queue full.
  auto first = f.batcher->submit(request({4, 4, 4, 4}));
  while (f.servable->started == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto q1 = f.batcher->submit(request({1, 1, 1, 1}));
  auto q2 = f.batcher->submit(request({2, 2, 2, 2}));
  auto t0 = Clock::now();
  expect_refusal(request({3, 3, 3, 3}), ErrorKind::Overloaded);
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(400));  // refused, not kept until a run ends
  // A request whose timeout passes while it waits is answered with Timeout.
  first.get();
  q1.get();
  q2.get();
  auto slow = f.batcher->submit(request({1, 1, 1, 1}));
  auto late = f.batcher->submit(request({1, 1, 1, 1}, {{"timeout", 1000}}));
  slow.get();
  try {
    late.get();
    ADD_FAILURE() << "answered";
  } catch (const ServeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
  }
  EXPECT_NE(f.metrics.render().find("outcome=\"rejected\"} 1\n"), std::string::npos);
}

TEST(Batcher, StopAnswersEveryQueuedRequestOnceAndRefusesNewOnes) {
  BatchingConfig c;
  c.max_batch_size = 3;
  Fixture f(c, std::chrono::milliseconds(20));
  std::vector<std::future<std::vector<InferTensor>>> futures;
  for (int i = 0; i < 40; ++i) futures.push_back(f.batcher->submit(request({i})));
  f.batcher->stop();
  for (int i = 0; i < 40; ++i) EXPECT_EQ(y_of(futures[i].get()), (std::vector<int32_t>{i + 1}));
  int64_t items = 0;
  for (auto b : f.servable->batches) items += b;
  EXPECT_EQ(items, 40);
  try {
    f.batcher->submit(request({1}));
    ADD_FAILURE() << "accepted after stop";
  } catch (const ServeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
  }
}

TEST(Batcher, ManyClientsShareBatches) {
  BatchingConfig c;
  c.max_batch_size = 16;
  Fixture f(c, std::chrono::milliseconds(2));
  std::atomic<int> answered{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 32; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        int v = t * 1000 + i;
        if (y_of(f.batcher->submit(request({v})).get()) != std::vector<int32_t>{v + 1}) ++wrong;
        ++answered;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered, 640);
  EXPECT_EQ(wrong, 0);
  // Clients that queue while a batch runs join the next one.
  EXPECT_LT(f.servable->batches.size(), 640u / 2);
}

}  // namespace
}  // namespace kiln::serve
