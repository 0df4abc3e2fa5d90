// Any bundle on tensors (a graph of no known task): requests that agree on every size but the
// batch are stacked, run once and split back, each getting exactly the rows the engine computes
// for the stacked input; a request of another length runs in a batch of its own; requests of the
// wrong datatype, rank or inputs are refused when admitted.
#include <gtest/gtest.h>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "serve/batcher.h"
#include "tests/test_support.h"
#include "tests/token_graph.h"

namespace kiln::serve {
namespace {

std::shared_ptr<InferRequest> ids_request(std::vector<int64_t> shape, std::vector<int64_t> ids) {
  auto r = std::make_shared<InferRequest>();
  InferTensor t{"ids", "INT64", std::move(shape), {}, {}, nlohmann::json::object()};
  t.data.resize(ids.size() * 8);
  std::memcpy(t.data.data(), ids.data(), t.data.size());
  r->inputs.push_back(std::move(t));
  return r;
}

TEST(TensorServable, StacksRequestsAndSplitsTheOutputsBack) {
  const std::string dir = test::process_dir("serve-tensor-test");
  const ModelDefinition def = test::token_model();
  write_bundle(dir + "/tokens.bundle", def, BuildInfo{});
  std::vector<std::unique_ptr<Servable>> instances;
  instances.push_back(load_servable(dir + "/tokens.bundle", {"cpu", 1}));
  const Servable& s = *instances[0];
  EXPECT_EQ(s.platform(), "kiln_tensor");
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].datatype, "INT64");
  EXPECT_EQ(s.inputs()[0].shape, (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(s.outputs()[1].datatype, "INT64");

  auto refusal = [&](const InferRequest& r) {
    try {
      s.admit(r);
    } catch (const ServeError& e) {
      return std::string(e.what());
    }
    return std::string("admitted");
  };
  auto wrong_type = ids_request({1, 1}, {0});
  wrong_type->inputs[0].datatype = "INT32";
  wrong_type->inputs[0].data.resize(4);
  EXPECT_EQ(refusal(*wrong_type), "input 'ids' must be INT64, not INT32");
  EXPECT_EQ(refusal(*ids_request({2}, {0, 1})), "input 'ids' must have 2 dimensions");
  auto renamed = ids_request({1, 1}, {0});
  renamed->inputs[0].name = "tokens";
  EXPECT_EQ(refusal(*renamed), "the request has no input 'ids'");

  Metrics metrics;
  BatchingConfig config;
  config.max_batch_size = 8;
  config.max_queue_delay_us = 2'000'000;
  Batcher batcher(std::move(instances), config, &metrics, "tokens", "1");
  auto a = batcher.submit(ids_request({1, 3}, {0, 6, 3}));
  auto b = batcher.submit(ids_request({2, 3}, {1, 1, 5, 2, 4, 0}));
  auto c = batcher.submit(ids_request({1, 4}, {3, 3, 2, 1}));  // another length: its own batch
  auto a_out = a.get(), b_out = b.get(), c_out = c.get();
  EXPECT_NE(metrics.render().find("kiln_batch_size_sum{model=\"tokens\",version=\"1\"} 4"), std::string::npos);
  EXPECT_NE(metrics.render().find("kiln_batch_size_count{model=\"tokens\",version=\"1\"} 2"), std::string::npos);

  Engine engine(def.graph(), def.constants(), EngineOptions{"cpu"});
  const auto stacked = engine.run({HostTensor::from_i64("ids", {3, 3}, {0, 6, 3, 1, 1, 5, 2, 4, 0})});
  const auto alone = engine.run({HostTensor::from_i64("ids", {1, 4}, {3, 3, 2, 1})});
  for (size_t o = 0; o < 2; ++o) {
    const size_t row = stacked[o].data.size() / 3;
    EXPECT_EQ(a_out[o].shape[0], 1);
    EXPECT_EQ(b_out[o].shape[0], 2);
    EXPECT_EQ(a_out[o].data, std::vector<uint8_t>(stacked[o].data.begin(), stacked[o].data.begin() + row));
    EXPECT_EQ(b_out[o].data, std::vector<uint8_t>(stacked[o].data.begin() + row, stacked[o].data.end()));
    EXPECT_EQ(c_out[o].data, alone[o].data);
    EXPECT_EQ(c_out[o].shape, alone[o].shape);
  }
}

}  // namespace
}  // namespace kiln::serve
