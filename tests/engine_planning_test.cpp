// Engine::planning, which `kiln eval --profile` reports per graph: a plan is made once per set of
// sizes, a run on sizes planned before makes none, and the time it took is counted with it. A
// plan is made again only when one of its own states moves to other memory, not when another
// engine of the model makes its states. And the inputs a plan tells its kernels are settled.
#include <gtest/gtest.h>

#include <map>

#include "backends/cpu/cpu_backend.h"
#include "backends/engine.h"
#include "graph/builder.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

TEST(EnginePlanning, CountsOnePlanPerSetOfSizes) {
  ModelDefinition def;
  GraphBuilder b(def);
  const Tensor w({3, 4});  // its values play no part in planning
  const int x = b.input("x", DType::F32, {{0, "batch"}, {4, ""}});
  b.output("y", b.linear(x, "fc", w, Tensor{}));
  def.validate();
  Engine engine(def.graph(), def.constants(), EngineOptions{"cpu"});
  EXPECT_EQ(engine.planning().plans, 0);
  const auto run = [&](int64_t batch) {
    std::vector<float> data(static_cast<size_t>(batch * 4), 1.0f);
    return engine.run({HostTensor::from_f32("x", {batch, 4}, data)});
  };
  run(2);
  run(2);
  const Engine::Planning first = engine.planning();
  EXPECT_EQ(first.plans, 1);
  EXPECT_GT(first.seconds, 0.0);
  EXPECT_LE(first.tuning_seconds, first.seconds);
  run(3);
  engine.prepare({{"batch", 3}});
  EXPECT_EQ(engine.planning().plans, 2) << "batch 3 was planned by its run";
  engine.prepare({{"batch", 5}});
  const Engine::Planning second = engine.planning();
  EXPECT_EQ(second.plans, 3);
  EXPECT_GT(second.seconds, first.seconds);
  run(2);
  EXPECT_EQ(engine.planning().plans, 3) << "batch 2 was planned before";
}

// Two graphs of one model, each appending a row to a state of its own ([batch, 4, 2]) and
// returning the state's sum over its rows, with one store for their states (as a model's
// encoder and decoder have).
TEST(EnginePlanning, APlanOutlivesStatesItDoesNotHold) {
  ModelDefinition def;
  for (const std::string name : {"first", "second"}) {
    GraphBuilder b(def, name);
    const int state = b.graph().add_state(name + "_cache", DType::F32, {{0, "batch"}, {4, ""}, {2, ""}});
    const int pos = b.input("position", DType::I64, {{1, ""}});
    const int row = b.input("row", DType::F32, {{0, "batch"}, {1, ""}, {2, ""}});
    const int updated = b.op("dynamic_update_slice", "append", {state, row, pos}, {{"axis", int64_t{1}}});
    b.output("sum", b.op("reduce", "sum", {updated}, {{"op", std::string("sum")}, {"axes", std::vector<int64_t>{1}}}));
  }
  def.validate();
  auto store = std::make_shared<StateStore>();
  Engine first(def.graph("first"), def.constants(), EngineOptions{"cpu"}, store);
  Engine second(def.graph("second"), def.constants(), EngineOptions{"cpu"}, store);
  // Row `at` of every batch entry set to `value`; returns the state's sum over rows, entry 0.
  const auto append = [](Engine& e, int64_t batch, int64_t at, float value) {
    const std::vector<float> row(static_cast<size_t>(batch * 2), value);
    const auto out =
        e.run({HostTensor::from_i64("position", {1}, {at}), HostTensor::from_f32("row", {batch, 1, 2}, row)});
    return out.at(0).as<float>()[0];
  };
  EXPECT_EQ(append(first, 2, 0, 1.0f), 1.0f);
  EXPECT_EQ(append(second, 2, 0, 5.0f), 5.0f);  // makes its state: the store's generation moves
  EXPECT_EQ(append(first, 2, 1, 2.0f), 3.0f) << "the first state kept its rows";
  EXPECT_EQ(first.planning().plans, 1) << "the second graph's state is none of the first plan's business";
  EXPECT_EQ(append(second, 8, 0, 1.0f), 1.0f);  // a larger batch: the second state in new memory
  EXPECT_EQ(append(first, 2, 2, 4.0f), 7.0f);
  EXPECT_EQ(first.planning().plans, 1);
  // The first state itself moves (a larger batch): the plan for batch 2 held its old memory and
  // is made again on the new one, which the state, back at batch 2's shape, starts zeroed in.
  EXPECT_EQ(append(first, 8, 0, 1.0f), 1.0f);
  EXPECT_EQ(first.planning().plans, 2);
  EXPECT_EQ(append(first, 2, 1, 3.0f), 3.0f);
  EXPECT_EQ(first.planning().plans, 3);
}

// The reference CPU backend, whose kernels note which of their inputs the plan says are settled.
class SettledInputs : public CpuBackend {
 public:
  SettledInputs() : CpuBackend(/*reference=*/true) {}
  std::map<std::string, std::vector<bool>> seen;  // by node name, per input slot
  std::unique_ptr<Kernel> make_kernel(const Graph& graph, int node, const ConstantLookup& constants) override {
    return std::make_unique<Noting>(CpuBackend::make_kernel(graph, node, constants), seen);
  }

 private:
  class Noting : public Kernel {
   public:
    Noting(std::unique_ptr<Kernel> kernel, std::map<std::string, std::vector<bool>>& seen)
        : kernel_(std::move(kernel)), seen_(seen) {}
    int variants() const override { return kernel_->variants(); }
    std::string variant_name(int v) const override { return kernel_->variant_name(v); }
    bool variant_runs(const KernelArgs& a, int v) const override { return kernel_->variant_runs(a, v); }
    int default_variant(const KernelArgs& a) const override { return kernel_->default_variant(a); }
    size_t workspace_bytes(const KernelArgs& a, int v) const override { return kernel_->workspace_bytes(a, v); }
    bool packs_input(int slot) const override { return kernel_->packs_input(slot); }
    bool zeroed_output(int slot) const override { return kernel_->zeroed_output(slot); }
    void run(const KernelArgs& a, int v) override {
      std::vector<bool>& flags = seen_[a.node->name];
      flags.clear();
      for (const TensorRef& t : a.inputs) flags.push_back(t.settled);
      kernel_->run(a, v);
    }

   private:
    std::unique_ptr<Kernel> kernel_;
    std::map<std::string, std::vector<bool>>& seen_;
  };
};

// Constants, graph inputs and states that no earlier node writes are settled (a GPU kernel may
// read them before its predecessor ends), except for the run's first node that launches anything
// (whose predecessor may be the last run's last kernel); activations, and a state after a node
// updated it in place, are not. A view (reshape) neither writes its input nor launches anything.
TEST(EnginePlanning, KernelsAreToldWhichInputsNoEarlierNodeWrites) {
  ModelDefinition def;
  GraphBuilder b(def);
  const int state = b.graph().add_state("cache", DType::F32, {{0, "batch"}, {4, ""}, {2, ""}});
  const int memory = b.graph().add_state("memory", DType::F32, {{0, "batch"}, {4, ""}, {2, ""}});
  const int pos = b.input("position", DType::I64, {{1, ""}});
  const int row = b.input("row", DType::F32, {{0, "batch"}, {1, ""}, {2, ""}});
  const auto view = [&](const std::string& name, int x, std::vector<int64_t> shape) {
    return b.op("reshape", name, {x}, {{"shape", std::move(shape)}});
  };
  const int memory_view = view("memory_view", memory, {-1, 4, 2});  // the run's first node
  const int doubled = b.op("add", "doubled", {row, row});
  const auto sum = [&](const std::string& name, int x) {
    return b.op("reduce", name, {x}, {{"op", std::string("sum")}, {"axes", std::vector<int64_t>{1}}});
  };
  b.output("read", sum("read", memory_view));
  const int updated =
      b.op("dynamic_update_slice", "append", {state, doubled, view("position_view", pos, {1})}, {{"axis", int64_t{1}}});
  b.output("after", sum("after", updated));
  def.validate();
  auto backend = std::make_shared<SettledInputs>();
  EngineOptions options{"cpu"};
  options.backend = backend;
  Engine engine(def.graph(), def.constants(), options);
  const std::vector<float> values = {1, 2, 3, 4};
  const auto out =
      engine.run({HostTensor::from_i64("position", {1}, {1}), HostTensor::from_f32("row", {2, 1, 2}, values)});
  EXPECT_EQ(out.at(1).as<float>()[0], 2.0f) << "the appended row, doubled";
  using Flags = std::vector<bool>;
  EXPECT_EQ(backend->seen.at("doubled"), (Flags{false, false})) << "the run's first node that launches anything";
  EXPECT_EQ(backend->seen.at("read"), (Flags{true})) << "a state no node writes, through a view";
  EXPECT_EQ(backend->seen.at("append"), (Flags{true, false, true}))
      << "the state it updates, an activation, an input through a view";
  EXPECT_EQ(backend->seen.at("after"), (Flags{false})) << "a state an earlier node updated";
}

}  // namespace
}  // namespace kiln
