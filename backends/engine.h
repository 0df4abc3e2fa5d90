// The engine: runs one graph on named host tensors. It places every node on the chosen backend
// or, where that backend has no kernel for it, on the CPU (with a copy at each crossing and a
// one-line note), applies the backend's rewrites (precision, fusions), and per set of symbol
// sizes (a plan: "batch=32") infers shapes, plans memory, picks each kernel's variant by timing
// (on GPUs, on the CPU when building a bundle, or from a bundle's saved choices) and captures
// the whole run for replay where the backend can.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/timing_cache.h"
#include "graph/graph.h"
#include "kiln/tensor.h"

namespace kiln {

struct EngineOptions {
  EngineOptions() = default;
  explicit EngineOptions(std::string device_, std::string precision_ = "fp32",
                         nlohmann::json saved_plans_ = nlohmann::json::object())
      : device(std::move(device_)), precision(std::move(precision_)), saved_plans(std::move(saved_plans_)) {}

  std::string device = "auto";     // "cpu", "cuda", or "auto" (the GPU when there is one)
  std::string precision = "fp32";  // float math on a GPU: "fp32" or "fp16"
  // A bundle's saved kernel choices, per backend: {"cuda": {"device": ..., "precision": ...,
  // "plans": {"batch=1": {"node name": "variant", ...}}}}; used on the same hardware (the GPU
  // model; the CPU model, oneDNN release and thread count) and precision.
  nlohmann::json saved_plans = nlohmann::json::object();
  // Time the CPU kernels' variants where there is no saved choice (kiln build does, and saves
  // what it chose in the bundle). Off elsewhere: the choice depends on timings, and two engines
  // on one bundle (a server and the C++ API) must compute alike. GPUs always time.
  bool time_cpu_variants = false;
  // Kernel choices timed by earlier processes, taken instead of timing again, and where this
  // engine times a problem, its choice for later ones (bundles give TimingCache::user()).
  std::shared_ptr<TimingCache> timing_cache;
  // Run on this backend instead of the one `device` names (embedders with a backend of their
  // own; tests). Nodes it cannot run go to the CPU as usual.
  std::shared_ptr<Backend> backend;
};

// Tensors that live across runs (a KV cache), by name, owned by one model's engines together so
// that one graph can write what another reads. Zeroed when first made or when their shape changes.
class StateStore {
 public:
  ~StateStore();
  struct Entry {
    std::shared_ptr<Backend> backend;  // kept alive: the memory is its
    void* data = nullptr;
    DType dtype = DType::F32;
    Shape shape;
    size_t bytes = 0;         // allocated, at least the shape's
    uint64_t generation = 0;  // the store's generation when this memory was allocated
  };
  // The state's memory for this shape on this backend: kept if it matches, zeroed and reused if
  // it is large enough (other plans keep their pointers), else made anew (a new generation).
  Entry& get(const std::string& name, const std::shared_ptr<Backend>& backend, DType dtype, const Shape& shape);
  void reset();                                        // zero every state
  uint64_t generation() const { return generation_; }  // changes whenever a state is made anew
  // The generation of one state's memory (0: no such state): a plan holding its pointer stays
  // valid while this does not change, whatever other states are made.
  uint64_t generation(const std::string& name) const;

 private:
  std::map<std::string, Entry> entries_;
  uint64_t generation_ = 0;
};

class Engine {
 public:
  Engine(const Graph& graph, ConstantLookup constants, const EngineOptions& options,
         std::shared_ptr<StateStore> states = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::string device() const;      // where the graph runs: "cpu", "cuda:0 (NVIDIA H200)"
  const Graph& graph() const;      // as given
  const Graph& executed() const;   // as run: rewritten, placed (Node::device), copies added
  int cpu_fallback_nodes() const;  // nodes placed on the CPU although a GPU runs the rest

  // Plans made so far (each new set of sizes, and each made again because one of its states
  // moved to other memory) and the wall time they took: memory, kernel choices (timing them on
  // GPUs), graph capture.
  struct Planning {
    int64_t plans = 0;
    double seconds = 0;
    double tuning_seconds = 0;  // of which choosing kernel variants
    int64_t timed = 0;          // kernel problems whose variants were timed
    int64_t cached = 0;         // kernel problems whose choice came from the timing cache
  };
  Planning planning() const;

  // Runs on tensors named like the graph's inputs (all of them); returns the graph's outputs,
  // then the named values in `taps`.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs, const std::vector<std::string>& taps = {});

  // The symbol sizes the inputs' shapes give.
  Bindings bind(const std::vector<HostTensor>& inputs) const;
  // Plans (and on GPUs tunes and captures) a set of sizes ahead of its first run.
  void prepare(const Bindings& bindings);
  // ms per call, one sample per `calls_per_sample` calls; inputs already where the engine keeps
  // them: those named in `inputs`, the others made up (made_up_input).
  std::vector<double> benchmark(const Bindings& bindings, int warmup, int samples, int calls_per_sample,
                                const std::vector<HostTensor>& inputs = {});
  // Kernel time per executed node (run order, as plan_summary lists them) in ms per call, nodes
  // run one by one; group_sums sums such per-node numbers per node group ("depthwise",
  // "attention"), and profile is the two together.
  std::vector<double> profile_nodes(const Bindings& bindings, int iterations,
                                    const std::vector<HostTensor>& inputs = {});
  std::map<std::string, double> group_sums(const std::vector<double>& per_node) const;
  std::map<std::string, double> profile(const Bindings& bindings, int iterations);
  // Bytes each executed node moves at least (run order) in a prepared plan: every input, weights
  // included, read once and every output written once, in the types it runs in; nothing for a
  // view, and for an in-place update of a state only its other inputs. A state (a KV cache)
  // counts whole, though attention may read only its filled part. Over the node's time, the
  // memory bandwidth it reaches.
  std::vector<double> node_bytes(const Bindings& bindings) const;
  // One line per executed node: op, name, device, chosen variant.
  std::vector<std::string> plan_summary(const Bindings& bindings) const;
  // The kernel choices of every prepared plan, to store in a bundle (see EngineOptions).
  nlohmann::json export_plans() const;
  int64_t activation_bytes() const;  // the largest plan's activation memory
  void reset_states();

  // CPU nodes only: called before each runs with its first input as f32 (calibration).
  using Observer = std::function<void(int node, const float* input, int64_t count)>;
  void set_observer(Observer observer);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A made-up value of a graph input for timing and tuning: floats deterministic and non-zero in
// [-1, 1) (zeros can run faster than real data), integers 0 (a valid token id, position, length
// and row index, whatever the table's size).
HostTensor made_up_input(const Value& input, const Shape& shape);

}  // namespace kiln
