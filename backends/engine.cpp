#include "backends/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/memory_plan.h"
#include "backends/placement.h"
#include "core/checked_math.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

constexpr size_t kWorkspaceCap = 16u << 20;  // scratch per backend; variants that need more are skipped
constexpr int64_t kAlignment = 256;

size_t value_bytes(DType t, const Shape& s) {
  return checked_mul(checked_numel(s, "tensor"), dtype_size(t), "tensor bytes");
}

}  // namespace

HostTensor made_up_input(const Value& input, const Shape& shape) {
  HostTensor t = HostTensor::zeros(input.name, input.dtype, shape);
  if (is_float(input.dtype)) {
    std::vector<float> f(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    convert_from_f32(input.dtype, f.data(), t.data.data(), t.numel());
  }
  return t;
}

// --- StateStore

StateStore::~StateStore() {
  for (auto& [name, e] : entries_) e.backend->release(e.data);
}

StateStore::Entry& StateStore::get(const std::string& name, const std::shared_ptr<Backend>& backend, DType dtype,
                                   const Shape& shape) {
  auto it = entries_.find(name);
  const size_t bytes = value_bytes(dtype, shape);
  if (it != entries_.end()) {
    Entry& e = it->second;
    // Engines of one model have backends of their own, on the same device: its memory serves them all.
    if (e.backend->device() == backend->device() && e.dtype == dtype) {
      if (e.shape == shape) return e;
      // Another size where the memory holds it (a generate call's cache capacities): the state
      // is made anew in place, so that the plans made for other sizes keep valid pointers.
      if (bytes <= e.bytes) {
        e.shape = shape;
        e.backend->zero(e.data, e.bytes);
        e.backend->synchronize();
        return e;
      }
    }
    e.backend->release(e.data);
    entries_.erase(it);
    // Plans holding the freed memory must not pass the store-wide check, even if making the
    // new memory below fails.
    ++generation_;
  }
  Entry e{backend, nullptr, dtype, shape, bytes};
  e.data = backend->allocate(e.bytes);
  backend->zero(e.data, e.bytes);
  backend->synchronize();
  e.generation = ++generation_;
  return entries_[name] = e;
}

uint64_t StateStore::generation(const std::string& name) const {
  const auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.generation;
}

void StateStore::reset() {
  // Zeroing is queued: one wait per backend at the end, not one per state (a decoder has two
  // per layer and attention block).
  std::set<Backend*> queued;
  for (auto& [name, e] : entries_) {
    e.backend->zero(e.data, e.bytes);
    queued.insert(e.backend.get());
  }
  for (Backend* b : queued) b->synchronize();
}

// --- Engine

struct Plan {
  Bindings bindings;
  std::vector<Shape> shapes;                                    // per value
  std::vector<void*> ptr;                                       // per value (constants: see Impl::constant_ptr)
  std::vector<void*> arena, zero_region, io_region, workspace;  // per backend
  std::vector<size_t> arena_bytes, zero_bytes, io_bytes;
  std::vector<KernelArgs> args;  // per node
  std::vector<int> variants;     // per node
  std::unique_ptr<Replay> replay;
  uint64_t state_generation = 0;  // the store's, when the plan was made or last found valid
  std::vector<std::pair<std::string, uint64_t>> state_memory;  // each state it holds, its generation
  // Engine::run's own replay where inputs and outputs are small: the run with its copies from
  // and to page-locked host memory (`staging`), so that a call is one launch and one wait.
  std::unique_ptr<Replay> io_replay;
  bool io_unstaged = false;            // staging was not possible (too large, refused)
  void* staging = nullptr;             // the primary backend's page-locked host memory
  std::map<int, size_t> staged_input;  // graph input value -> its offset in staging
  std::vector<size_t> staged_output;   // offsets of the outputs, then the taps
};

struct Engine::Impl {
  Graph original, exec;
  ConstantLookup constants;
  EngineOptions options;
  std::vector<std::shared_ptr<Backend>> backends;  // [0]: the one asked for; [1]: the CPU, for fallback
  std::shared_ptr<StateStore> states;
  std::vector<int> node_backend, value_backend, root;
  // exec's named values (constants apart; the first of a name, as Graph::find_value): a call
  // looks its inputs up here instead of scanning the graph's values for each.
  std::unordered_map<std::string, int> named;
  std::vector<std::unique_ptr<Kernel>> kernels;          // per node; none for copies
  std::map<std::pair<int, int>, void*> constant_memory;  // (value, backend)
  std::set<std::pair<int, int>> borrowed;                // constant_memory that the lookup owns
  std::map<std::string, nlohmann::json> saved;           // plan key -> {node name: variant}
  std::map<std::string, std::unique_ptr<Plan>> plans;
  std::map<std::string, std::vector<int>> tuned;  // plan key -> variants, kept when a plan is rebuilt
  // A kernel's problem (op, form, its tensors' types and shapes) -> the variant timed fastest:
  // a transformer's layers share a few GEMM shapes, and plans that differ only where a node
  // does not look (a decoder step's cache sizes) have the same problems, so each is timed once.
  std::map<std::string, int> problem_tuned;
  Observer observer;
  int fallback_nodes = 0;
  Engine::Planning planning;

  Backend& primary() { return *backends[0]; }
  bool single_backend() const {  // every node on the primary backend (no CPU fallback)
    return std::all_of(node_backend.begin(), node_backend.end(), [](int b) { return b == 0; });
  }
  // A node whose variant the planner chooses (and a bundle's plan records): a kernel with
  // several, on the primary backend (CPU fallback nodes keep their defaults).
  bool has_choice(size_t i) const { return kernels[i] && kernels[i]->variants() > 1 && node_backend[i] == 0; }
  std::string key(const Bindings& b, const std::vector<int>& taps) const;
  Plan& plan_for(const Bindings& b, const std::vector<int>& taps);
  // The plan made for these sizes (no taps), or none: for reports that must not plan.
  const Plan* planned(const Bindings& b) const {
    const auto it = plans.find(key(b, {}));
    return it == plans.end() ? nullptr : it->second.get();
  }
  void make_plan(Plan& plan, const std::string& key, const Bindings& b, const std::vector<int>& taps);
  void materialize_constants();
  void choose_variants(Plan& plan, const std::string& key);
  // The variant the timing cache holds for node i's problem on this hardware, or -1.
  int cached_variant(size_t i, const std::string& problem) {
    if (!options.timing_cache) return -1;
    const std::optional<std::string> name = options.timing_cache->find(primary().hardware(), problem);
    if (!name) return -1;
    for (int v = 0; v < kernels[i]->variants(); ++v)
      if (kernels[i]->variant_name(v) == *name) return v;
    return -1;
  }
  // A kernel problem whose two fastest variants timed alone within kCloseCall of each other.
  struct CloseCall {
    std::vector<size_t> nodes;  // that have this problem
    int runner_up = 0;
    double ms = 0;  // the chosen variant's time alone
  };
  static constexpr double kCloseCall = 0.03, kWholeMargin = 0.005;
  static constexpr size_t kMostCloseCalls = 6;
  // Variants timed in full after a first look at all of them (and the default, always).
  static constexpr size_t kFinalists = 4;
  void settle_close_calls(Plan& plan, std::map<std::string, CloseCall>& calls);
  void execute(Plan& plan);
  void run_node(Plan& plan, int i);
  void fill_inputs(Plan& plan, const std::vector<HostTensor>& given = {});
  bool stage_io(Plan& plan, const std::vector<int>& taps);
  void release(Plan& plan);
  void* constant_ptr(int value, int backend) const;
};

namespace {

// Constants read in place start where allocate()d memory would (a bundle aligns its tensors so).
constexpr uintptr_t kConstantAlignment = 64;

std::shared_ptr<Backend> primary_backend(const EngineOptions& o) {
  if (o.backend) return o.backend;
  if (o.device == "cpu") return std::make_unique<CpuBackend>();
  if (o.device == "cpu-reference") return std::make_unique<CpuBackend>(/*reference=*/true);
  if (o.device == "cuda") {
    KILN_CHECK(cuda_available(), "[engine] --device cuda: no usable CUDA GPU (or kiln was built without CUDA)");
    return make_backend("cuda", o.precision);
  }
  KILN_CHECK(o.device == "auto", "[engine] unknown device '{}' (cpu, cpu-reference, cuda or auto)", o.device);
  if (cuda_available()) return make_backend("cuda", o.precision);
  return std::make_unique<CpuBackend>();
}

}  // namespace

Engine::Engine(const Graph& graph, ConstantLookup constants, const EngineOptions& options,
               std::shared_ptr<StateStore> states)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  KILN_CHECK(options.precision == "fp32" || options.precision == "fp16", "[engine] unknown precision '{}'",
             options.precision);
  m.original = graph;
  m.exec = graph;
  m.constants = std::move(constants);
  m.options = options;
  m.states = states ? std::move(states) : std::make_shared<StateStore>();
  m.backends.push_back(primary_backend(options));
  Backend& primary = m.primary();
  for (size_t i = 0; i < m.exec.nodes().size(); ++i) m.exec.node(static_cast<int>(i)).device = primary.name();
  primary.convert(m.exec);
  const auto fallback = place_nodes(m.exec, primary);
  for (const auto& [op, count] : fallback) {
    std::fprintf(stderr, "kiln: note: [%s] no kernel for op '%s' (%d node%s): %s on the CPU\n", primary.name().c_str(),
                 op.c_str(), count, count == 1 ? "" : "s", count == 1 ? "it runs" : "they run");
    m.fallback_nodes += count;
  }
  primary.fuse(m.exec);
  insert_copies(m.exec);
  m.exec.validate();
  for (size_t v = 0; v < m.exec.values().size(); ++v)
    if (m.exec.values()[v].kind != ValueKind::Constant && !m.exec.values()[v].name.empty())
      m.named.try_emplace(m.exec.values()[v].name, static_cast<int>(v));
  if (primary.name() != "cpu" &&
      std::any_of(m.exec.nodes().begin(), m.exec.nodes().end(), [](const Node& n) { return n.device == "cpu"; }))
    m.backends.push_back(std::make_shared<CpuBackend>());

  auto backend_index = [&](const std::string& name) {
    for (size_t b = 0; b < m.backends.size(); ++b)
      if (m.backends[b]->name() == name) return static_cast<int>(b);
    fail("[engine] no backend '{}'", name);
  };
  const auto& nodes = m.exec.nodes();
  const auto devices = value_devices(m.exec);
  m.value_backend.assign(m.exec.values().size(), -1);
  for (size_t v = 0; v < devices.size(); ++v)
    if (!devices[v].empty()) m.value_backend[v] = backend_index(devices[v]);
  m.root.resize(m.exec.values().size());
  for (size_t v = 0; v < m.root.size(); ++v) m.root[v] = static_cast<int>(v);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    m.node_backend.push_back(backend_index(n.device));
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int a = n.op == "copy" ? -1 : n.def().aliases_input(static_cast<int>(o));
      if (a >= 0) m.root[n.outputs[o]] = m.root[n.inputs[a]];
    }
    m.kernels.push_back(n.op == "copy"
                            ? nullptr
                            : m.backends[m.node_backend[i]]->make_kernel(m.exec, static_cast<int>(i), m.constants));
  }
  for (auto& b : m.backends) b->kernels_made();
  m.materialize_constants();

  // Saved kernel choices count only on the hardware and precision they were timed with.
  const nlohmann::json saved =
      options.saved_plans.is_object() ? options.saved_plans.value(primary.name(), nlohmann::json()) : nlohmann::json();
  // Elsewhere a GPU times its kernels again and says so; the CPU takes its kernels' defaults
  // (oneDNN's picks) without a word, as it does for a bundle built without CPU plans.
  if (saved.is_object()) {
    if (saved.value("device", std::string()) != primary.hardware() ||
        saved.value("precision", std::string()) != options.precision) {
      if (primary.is_accelerator())
        std::fprintf(stderr, "kiln: the bundle was planned on %s (%s); re-planning for %s (%s)\n",
                     saved.value("device", std::string("?")).c_str(),
                     saved.value("precision", std::string("?")).c_str(), primary.hardware().c_str(),
                     options.precision.c_str());
    } else {
      const nlohmann::json plans = saved.value("plans", nlohmann::json::object());  // items() needs a named object
      for (auto& [key, choices] : plans.items())
        if (choices.is_object()) m.saved[key] = choices;
    }
  }
}

Engine::~Engine() {
  if (!impl_) return;
  for (auto& b : impl_->backends) b->synchronize();
  for (auto& [key, plan] : impl_->plans) impl_->release(*plan);
  for (auto& [key, p] : impl_->constant_memory)
    if (!impl_->borrowed.count(key)) impl_->backends[key.second]->release(p);
  impl_->kernels.clear();
}

std::string Engine::device() const { return impl_->backends[0]->device(); }
const Graph& Engine::graph() const { return impl_->original; }
const Graph& Engine::executed() const { return impl_->exec; }
int Engine::cpu_fallback_nodes() const { return impl_->fallback_nodes; }
Engine::Planning Engine::planning() const { return impl_->planning; }
void Engine::set_observer(Observer observer) { impl_->observer = std::move(observer); }
void Engine::reset_states() { impl_->states->reset(); }

void* Engine::Impl::constant_ptr(int value, int backend) const {
  auto it = constant_memory.find({value, backend});
  return it == constant_memory.end() ? nullptr : it->second;
}

// Each constant that a kernel reads as a tensor (rather than packing it) is placed, once, on
// that kernel's backend in the graph's type for it; a backend that reads host memory reads one
// already in that type where the lookup holds it (a mapped bundle: nothing is copied, and pages
// are read in as kernels touch them).
void Engine::Impl::materialize_constants() {
  const auto& nodes = exec.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!kernels[i]) continue;
    for (size_t slot = 0; slot < nodes[i].inputs.size(); ++slot) {
      const int v = nodes[i].inputs[slot];
      if (v < 0 || exec.values()[v].kind != ValueKind::Constant || kernels[i]->packs_input(static_cast<int>(slot)))
        continue;
      const int b = node_backend[i];
      if (constant_memory.count({v, b})) continue;
      const Value& val = exec.values()[v];
      const ConstantView view = constants(val.name);
      if (view.dtype == val.dtype && backends[b]->reads_host_memory() && !view.bytes.empty() &&
          reinterpret_cast<uintptr_t>(view.bytes.data()) % kConstantAlignment == 0) {
        constant_memory[{v, b}] = const_cast<uint8_t*>(view.bytes.data());  // kernels only read constants
        borrowed.insert({v, b});
        continue;
      }
      // Stored in the graph's type (an embedding table of an fp16 bundle): uploaded from where
      // the lookup holds it, without a host copy; in another type, converted first.
      std::span<const uint8_t> bytes = view.bytes;
      std::vector<uint8_t> converted;
      if (view.dtype != val.dtype) {
        const std::vector<float> f = view.to_f32();
        converted.resize(f.size() * dtype_size(val.dtype));
        convert_from_f32(val.dtype, f.data(), converted.data(), static_cast<int64_t>(f.size()));
        bytes = converted;
      }
      void* p = backends[b]->allocate(bytes.size());
      constant_memory[{v, b}] = p;
      backends[b]->upload(p, bytes.data(), bytes.size());
    }
  }
  for (auto& b : backends) b->synchronize();
}

std::string Engine::Impl::key(const Bindings& b, const std::vector<int>& taps) const {
  std::string k = to_string(b);
  for (int t : taps) k += fmt::format("|{}", exec.values()[t].name);
  return k;
}

Plan& Engine::Impl::plan_for(const Bindings& b, const std::vector<int>& taps) {
  const std::string k = key(b, taps);
  auto it = plans.find(k);
  if (it != plans.end()) {
    Plan& p = *it->second;
    // Some state was made anew since: this plan holds on only if none of its own were (an
    // encoder's plan outlives the decoder's caches being made after it).
    if (p.state_generation != states->generation() &&
        std::all_of(p.state_memory.begin(), p.state_memory.end(),
                    [&](const auto& m) { return states->generation(m.first) == m.second; }))
      p.state_generation = states->generation();
    if (p.state_generation == states->generation()) return p;
    release(p);  // one of its states moved to other memory (it grew): plan again
    plans.erase(it);
  }
  const auto start = std::chrono::steady_clock::now();
  auto plan = std::make_unique<Plan>();
  const Engine::Planning before = planning;
  try {
    make_plan(*plan, k, b, taps);
  } catch (...) {  // a plan that failed counts nowhere
    planning = before;
    throw;
  }
  ++planning.plans;
  planning.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return *(plans[k] = std::move(plan));
}

void Engine::Impl::release(Plan& plan) {
  plan.replay.reset();
  plan.io_replay.reset();
  for (size_t i = 0; i < backends.size(); ++i)
    for (void* p : {plan.arena[i], plan.zero_region[i], plan.io_region[i], plan.workspace[i]})
      if (p) backends[i]->release(p);
  if (plan.staging) primary().release_host(plan.staging);
}

void Engine::Impl::make_plan(Plan& plan, const std::string& key, const Bindings& b, const std::vector<int>& taps) {
  plan.bindings = b;
  plan.shapes = exec.infer_shapes(b);
  const auto& values = exec.values();
  const auto& nodes = exec.nodes();
  const size_t nv = values.size(), nb = backends.size();
  plan.ptr.assign(nv, nullptr);
  plan.arena.assign(nb, nullptr);
  plan.zero_region.assign(nb, nullptr);
  plan.io_region.assign(nb, nullptr);
  plan.workspace.assign(nb, nullptr);
  plan.arena_bytes.assign(nb, 0);
  plan.zero_bytes.assign(nb, 0);
  plan.io_bytes.assign(nb, 0);

  for (int s : exec.states()) {
    const Value& v = values[s];
    const StateStore::Entry& e = states->get(v.name, backends[value_backend[s]], v.dtype, plan.shapes[s]);
    plan.ptr[s] = e.data;
    plan.state_memory.emplace_back(v.name, e.generation);
  }
  plan.state_generation = states->generation();

  // Lifetimes of the values that own memory (roots), in steps; aliases extend their root's.
  std::vector<int> first(nv, -1), last(nv, -1);
  std::vector<bool> zeroed(nv, false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int v : nodes[i].inputs)
      if (v >= 0) last[root[v]] = std::max(last[root[v]], static_cast<int>(i));
    for (size_t o = 0; o < nodes[i].outputs.size(); ++o) {
      const int v = nodes[i].outputs[o];
      if (root[v] == v) first[v] = static_cast<int>(i);
      last[root[v]] = std::max(last[root[v]], static_cast<int>(i));
      if (kernels[i] && kernels[i]->zeroed_output(static_cast<int>(o))) zeroed[root[v]] = true;
    }
  }
  for (const auto& o : exec.outputs()) last[root[o.value]] = kLastStep;
  for (int t : taps) last[root[t]] = kLastStep;
  // Values visited inputs first: blocks that all live the whole run are laid out in visiting
  // order, so the inputs and then what is read after the run are each one span to copy (stage_io).
  std::vector<size_t> order(nv);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_partition(order.begin(), order.end(), [&](size_t v) { return values[v].kind == ValueKind::Input; });
  for (size_t bi = 0; bi < nb; ++bi) {
    // Three regions: activations share the arena; accumulated outputs are zeroed once per run
    // (never shared); graph inputs and what is read after the run have memory of their own.
    // (With the inputs in the arena, an image network ran 1.2x slower on an H200: their memory,
    // reused by later layers, slowed every kernel; measured, not explained.)
    enum Region { Shared, Zeroed, Io };
    std::vector<MemoryBlock> blocks[3];
    std::vector<int> owners[3];
    for (size_t v : order) {
      const ValueKind kind = values[v].kind;
      if (root[v] != static_cast<int>(v) || value_backend[v] != static_cast<int>(bi) ||
          (kind != ValueKind::Activation && kind != ValueKind::Input))
        continue;
      MemoryBlock blk{static_cast<int64_t>(value_bytes(values[v].dtype, plan.shapes[v])), first[v], last[v]};
      if (blk.last < blk.first) blk.last = blk.first;  // written, never read
      const Region r = zeroed[v] ? Zeroed : (kind == ValueKind::Input || last[v] == kLastStep) ? Io : Shared;
      if (r != Shared) blk = {blk.bytes, -1, kLastStep};
      blocks[r].push_back(blk);
      owners[r].push_back(static_cast<int>(v));
    }
    Backend& be = *backends[bi];
    void** base[3] = {&plan.arena[bi], &plan.zero_region[bi], &plan.io_region[bi]};
    size_t* bytes[3] = {&plan.arena_bytes[bi], &plan.zero_bytes[bi], &plan.io_bytes[bi]};
    for (int r = 0; r < 3; ++r) {
      const ArenaPlan region = plan_arena(blocks[r], kAlignment);
      *bytes[r] = static_cast<size_t>(region.bytes);
      if (region.bytes) *base[r] = be.allocate(static_cast<size_t>(region.bytes));
      for (size_t k = 0; k < owners[r].size(); ++k)
        plan.ptr[owners[r][k]] = static_cast<uint8_t*>(*base[r]) + region.offset[k];
    }
  }
  for (size_t v = 0; v < nv; ++v)
    if (root[v] != static_cast<int>(v)) plan.ptr[v] = plan.ptr[root[v]];

  plan.args.resize(nodes.size());
  std::vector<size_t> workspace(nb, 0);
  // A plan tuned before or saved in the bundle runs known variants: only they (and the defaults)
  // are asked for their workspace, since asking a variant can be slow host work (a cuDNN plan
  // compiles its kernel).
  const auto tuned_plan = tuned.find(key);
  const auto saved_plan = saved.find(key);
  auto may_run = [&](size_t i, int var, const KernelArgs& a) {
    if (var == kernels[i]->default_variant(a)) return true;
    if (tuned_plan != tuned.end()) return tuned_plan->second[i] == var;
    if (saved_plan != saved.end())
      return saved_plan->second.value(nodes[i].name, std::string()) == kernels[i]->variant_name(var);
    return true;
  };
  // Settled inputs: no node of the run writes them before this one, and a kernel of the run
  // on the same backend comes before it (which waited for the last run's kernels to end: the
  // first kernel of a run may start while the last run's last one runs). A view (reshape) does
  // neither: it writes nothing and launches nothing. (Until 2026-12-07 a view counted as a write
  // of its root: a decoder step's position, reshaped for the embedding, was then never settled,
  // and its self-attention kernels all waited before their first load.)
  std::vector<bool> written(nv, false);  // the roots of the values the nodes so far write
  std::vector<bool> kernel_before(nb, false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    bool view = n.op != "copy" && !n.def().in_place() && !n.outputs.empty();
    for (size_t o = 0; view && o < n.outputs.size(); ++o) view = n.def().aliases_input(static_cast<int>(o)) >= 0;
    KernelArgs& a = plan.args[i];
    a.node = &n;
    a.stream = backends[node_backend[i]]->stream();
    a.inputs.clear();
    a.outputs.clear();
    for (int v : n.inputs) {
      if (v < 0) {
        a.inputs.push_back({});
        continue;
      }
      void* p = values[v].kind == ValueKind::Constant ? constant_ptr(v, node_backend[i]) : plan.ptr[v];
      const bool settled =
          kernel_before[node_backend[i]] && values[root[v]].kind != ValueKind::Activation && !written[root[v]];
      a.inputs.push_back({p, values[v].dtype, plan.shapes[v], settled});
    }
    for (int v : n.outputs) {
      a.outputs.push_back({plan.ptr[v], values[v].dtype, plan.shapes[v]});
      if (!view) written[root[v]] = true;
    }
    if (kernels[i] && !view) kernel_before[node_backend[i]] = true;
    if (!kernels[i]) continue;
    // Room for every variant the cap allows, and always for the default (a kernel's only way).
    for (int var = 0; var < kernels[i]->variants(); ++var) {
      if (!may_run(i, var, a)) continue;
      const size_t ws = kernels[i]->workspace_bytes(a, var);
      if (ws <= kWorkspaceCap || var == kernels[i]->default_variant(a))
        workspace[node_backend[i]] = std::max(workspace[node_backend[i]], ws);
    }
  }
  for (size_t bi = 0; bi < nb; ++bi)
    if (workspace[bi]) plan.workspace[bi] = backends[bi]->allocate(workspace[bi]);
  for (size_t i = 0; i < nodes.size(); ++i) plan.args[i].workspace = plan.workspace[node_backend[i]];
  const auto tuning = std::chrono::steady_clock::now();
  choose_variants(plan, key);
  planning.tuning_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - tuning).count();
  // One backend for everything, and a GPU: capture the whole run and replay it.
  if (single_backend() && primary().is_accelerator()) plan.replay = primary().capture([&] { execute(plan); });
}

// The variant of each kernel that has several: the bundle's saved choice for this plan, else
// the fastest when timed here (accelerators; the CPU when asked), else the kernel's default.
void Engine::Impl::choose_variants(Plan& plan, const std::string& key) {
  const auto& nodes = exec.nodes();
  plan.variants.assign(nodes.size(), 0);
  auto runs = [&](size_t i, int v) {
    return v >= 0 && v < kernels[i]->variants() && kernels[i]->variant_runs(plan.args[i], v) &&
           kernels[i]->workspace_bytes(plan.args[i], v) <= kWorkspaceCap;
  };
  bool any = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!kernels[i]) continue;
    plan.variants[i] = kernels[i]->default_variant(plan.args[i]);
    any = any || has_choice(i);
  }
  if (!any) return;
  if (auto t = tuned.find(key); t != tuned.end()) {
    plan.variants = t->second;
    return;
  }
  auto saved_plan = saved.find(key);
  if (saved_plan != saved.end()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!kernels[i] || kernels[i]->variants() < 2) continue;
      const std::string name = saved_plan->second.value(nodes[i].name, std::string());
      for (int v = 0; v < kernels[i]->variants(); ++v)
        if (kernels[i]->variant_name(v) == name && runs(i, v)) plan.variants[i] = v;
    }
  } else if (primary().is_accelerator() || options.time_cpu_variants) {
    // Realistic values in every buffer first, then each variant of each kernel timed in place.
    // A graph with states (a KV cache) is not run on made-up inputs: that would write into
    // the caches of sequences being generated; its kernels are timed on the buffers as they are.
    const bool stateful = !exec.states().empty();
    std::vector<std::string> problems(nodes.size());  // of the nodes to choose for
    std::vector<int> cached(nodes.size(), -1);        // the timing cache's choice for a node's problem
    bool to_time = false;  // a problem that neither this engine nor the timing cache has a choice for
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!has_choice(i) || (stateful && nodes[i].def().in_place())) continue;
      std::string& problem = problems[i];
      problem = nodes[i].op + " " + kernels[i]->describe();
      for (const auto* refs : {&plan.args[i].inputs, &plan.args[i].outputs})
        for (const TensorRef& t : *refs) problem += fmt::format("|{} {}", dtype_name(t.dtype), to_string(t.shape));
      const auto t = problem_tuned.find(problem);
      if (t == problem_tuned.end()) cached[i] = cached_variant(i, problem);
      const int v = t != problem_tuned.end() ? t->second : cached[i];
      to_time = to_time || !runs(i, v);
    }
    // (Where every choice is known, the warm-up run is skipped: on an H200 it was most of a
    // cold encoder plan's time once the timing cache held every choice, 28 ms of 39.)
    if (!stateful && to_time) {
      fill_inputs(plan);
      execute(plan);
    }
    std::map<std::string, CloseCall> close_calls;            // by problem
    std::vector<std::pair<std::string, size_t>> timed_here;  // problems timed, with a node that has each
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (problems[i].empty()) continue;
      const std::string& problem = problems[i];
      if (auto t = problem_tuned.find(problem); t != problem_tuned.end() && runs(i, t->second)) {
        plan.variants[i] = t->second;
        // The problem string leaves out what some kernels' variant_runs reads (an activation):
        // a node joins the close call only where it can run the runner-up.
        if (auto c = close_calls.find(problem); c != close_calls.end() && runs(i, c->second.runner_up))
          c->second.nodes.push_back(i);
        continue;
      }
      if (const int v = cached[i]; v >= 0 && runs(i, v)) {
        plan.variants[i] = problem_tuned[problem] = v;
        ++planning.cached;
        continue;
      }
      // Each variant warmed up, then ten runs of each timed as a plan's replay runs them (in one
      // captured replay): timed launch by launch, a decoder step's kernels of a few
      // microseconds took about what launching them costs the host, every variant looked alike
      // and the pick was noise. Outputs a kernel accumulates into (a squeeze-excite mean) grow
      // over these runs: the timings do not depend on the values, and every execute() zeroes
      // them first. CPU kernels are timed as they run, three runs each: a batch's large conv
      // takes milliseconds there.
      auto timed = [&](const std::vector<int>& variants, int reps) {
        std::vector<std::function<void()>> work;
        for (int v : variants)
          work.push_back([&, v, reps] {
            for (int r = 0; r < reps; ++r) kernels[i]->run(plan.args[i], v);
          });
        return primary().time_replayed_ms(work);
      };
      std::vector<int> candidates;
      for (int v = 0; v < kernels[i]->variants(); ++v) {
        if (!runs(i, v)) continue;
        kernels[i]->run(plan.args[i], v);
        candidates.push_back(v);
      }
      // Many variants (a GEMM's 19): one run of each first, and only the default and the
      // fastest few are timed in full. With all 19 timed in full, an opus-mt-en-de-sized
      // encoder's plan took 190 ms while a translation waited (beam 4 over 32 sources, an
      // H100); with the first look, 100 ms, and the plans ran as fast.
      if (candidates.size() > 1) ++planning.timed;
      if (candidates.size() > kFinalists) {
        const std::vector<double> first = timed(candidates, 1);
        std::vector<size_t> order(candidates.size());
        for (size_t c = 0; c < order.size(); ++c) order[c] = c;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
        std::vector<int> finalists;
        for (size_t c : order)
          if (finalists.size() < kFinalists || candidates[c] == plan.variants[i]) finalists.push_back(candidates[c]);
        candidates = finalists;
      }
      if (candidates.size() == 1) plan.variants[i] = candidates[0];
      if (candidates.size() > 1) {
        // The fastest, but the default unless another beats it by more than timings move.
        const std::vector<double> ms = timed(candidates, primary().is_accelerator() ? 10 : 3);
        const size_t fastest = std::min_element(ms.begin(), ms.end()) - ms.begin();
        // candidates.size() where the default cannot run here.
        size_t chosen = std::find(candidates.begin(), candidates.end(), plan.variants[i]) - candidates.begin();
        if (chosen == candidates.size() || ms[fastest] < (1 - primary().timing_noise()) * ms[chosen]) chosen = fastest;
        plan.variants[i] = candidates[chosen];
        // The runner-up within kCloseCall of the chosen one: whole-plan timing decides below.
        size_t runner_up = chosen;
        for (size_t c = 0; c < candidates.size(); ++c)
          if (c != chosen && (runner_up == chosen || ms[c] < ms[runner_up])) runner_up = c;
        if (runner_up != chosen && ms[runner_up] <= (1 + kCloseCall) * ms[chosen])
          close_calls.try_emplace(problem, CloseCall{{i}, candidates[runner_up], ms[chosen]});
      }
      problem_tuned[problem] = plan.variants[i];
      if (candidates.size() > 1) timed_here.emplace_back(problem, i);
    }
    if (!stateful && single_backend() && primary().is_accelerator()) settle_close_calls(plan, close_calls);
    if (options.timing_cache && !timed_here.empty()) {
      for (const auto& [problem, i] : timed_here)  // as settled
        options.timing_cache->record(primary().hardware(), problem, kernels[i]->variant_name(problem_tuned[problem]));
      options.timing_cache->save();
    }
  }
  tuned[key] = plan.variants;
}

// Close calls between two variants, settled by timing the whole plan with each. Timed alone, a
// kernel runs with its inputs hot in L2 and no neighbours: an image classifier's seven project
// convs of one shape took the same time alone with a split-K tile and without, and the network
// took 4% longer without (bench/results/2026-12-05-h100-planner/). The plan runs three times per
// timing, in one replay; the runner-up stays if the plan is faster by more than kWholeMargin.
// The close calls with the most time at stake (their time in the kernel-by-kernel timing, times
// the nodes that share the problem) go first, at most kMostCloseCalls of them.
void Engine::Impl::settle_close_calls(Plan& plan, std::map<std::string, CloseCall>& calls) {
  std::vector<std::pair<std::string, CloseCall*>> order;
  for (auto& [problem, call] : calls) order.emplace_back(problem, &call);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->ms * a.second->nodes.size() > b.second->ms * b.second->nodes.size();
  });
  if (order.size() > kMostCloseCalls) order.resize(kMostCloseCalls);
  if (order.empty()) return;
  auto whole = [&] {
    return primary().time_replayed_ms({[&] {
      for (int r = 0; r < 3; ++r) execute(plan);
    }})[0];
  };
  double best = whole();
  for (auto& [problem, call] : order) {
    const std::vector<int> before = plan.variants;
    for (size_t i : call->nodes) plan.variants[i] = call->runner_up;
    const double t = whole();
    if (t < (1 - kWholeMargin) * best) {
      best = t;
      problem_tuned[problem] = call->runner_up;
    } else {
      plan.variants = before;
    }
  }
}

void Engine::Impl::run_node(Plan& plan, int i) {
  const Node& n = exec.nodes()[i];
  const KernelArgs& a = plan.args[i];
  if (!kernels[i]) {  // a copy between devices: one side is the host
    const int from = value_backend[n.inputs[0]], to = node_backend[i];
    const size_t bytes = a.outputs[0].bytes();
    if (backends[to]->name() == "cpu")
      backends[from]->download(a.outputs[0].data, a.inputs[0].data, bytes);
    else
      backends[to]->upload(a.outputs[0].data, a.inputs[0].data, bytes);
    return;
  }
  if (observer && backends[node_backend[i]]->name() == "cpu" && !a.inputs.empty() && a.inputs[0].dtype == DType::F32 &&
      a.inputs[0].data)
    observer(i, a.inputs[0].as<const float>(), a.inputs[0].numel());
  kernels[i]->run(a, plan.variants[i]);
}

void Engine::Impl::execute(Plan& plan) {
  for (size_t b = 0; b < backends.size(); ++b)
    if (plan.zero_bytes[b]) backends[b]->zero(plan.zero_region[b], plan.zero_bytes[b]);
  for (size_t i = 0; i < exec.nodes().size(); ++i) run_node(plan, static_cast<int>(i));
}

// Input values for timing, uploaded where the plan keeps them: those given by name, the rest
// made up (made_up_input).
void Engine::Impl::fill_inputs(Plan& plan, const std::vector<HostTensor>& given) {
  for (int v : exec.inputs()) {
    const Value& val = exec.values()[v];
    const auto it = std::find_if(given.begin(), given.end(), [&](const HostTensor& t) { return t.name == val.name; });
    const HostTensor made = it == given.end() ? made_up_input(val, plan.shapes[v]) : HostTensor{};
    const HostTensor& t = it == given.end() ? made : *it;
    KILN_CHECK(t.dtype == val.dtype && t.data.size() == value_bytes(val.dtype, plan.shapes[v]),
               "[engine] input '{}' must be {} of shape {}", val.name, dtype_name(val.dtype),
               to_string(plan.shapes[v]));
    backends[value_backend[v]]->upload(plan.ptr[v], t.data.data(), t.data.size());
  }
}

Bindings Engine::bind(const std::vector<HostTensor>& inputs) const {
  const Impl& m = *impl_;
  std::vector<std::pair<int, const Shape*>> given;
  given.reserve(inputs.size());
  for (const auto& t : inputs) {
    const auto it = m.named.find(t.name);
    const bool input = it != m.named.end() && (m.exec.values()[it->second].kind == ValueKind::Input ||
                                               m.exec.values()[it->second].kind == ValueKind::State);
    KILN_CHECK(input, "[graph] there is no input named '{}'", t.name);
    given.emplace_back(it->second, &t.shape);
  }
  for (int v : m.exec.inputs())
    KILN_CHECK(std::any_of(given.begin(), given.end(), [&](const auto& g) { return g.first == v; }),
               "[engine] input '{}' is missing", m.exec.values()[v].name);
  return m.exec.bind(given);
}

// A replayed plan whose inputs and outputs are small gets a second replay for run(): its inputs
// copied in from page-locked memory, the run, its outputs and the error flags copied back. A
// call is then one launch and one wait instead of a copy from pageable memory per input, a
// wait per output and one for the flags. On an H200 a translation decoder step's call took
// 0.18 ms more than its replay (0.36 ms) at 1 row and 0.40 ms more at 128 rows; staged, 0.03
// and 0.14 ms. Large inputs (a batch of images) keep the direct copies: pinning that much
// memory per plan would cost more than it saves.
bool Engine::Impl::stage_io(Plan& plan, const std::vector<int>& taps) {
  constexpr size_t kMaxStagedBytes = size_t{1} << 20;
  constexpr size_t kAlign = static_cast<size_t>(kAlignment);
  if (plan.io_replay) return true;
  if (!plan.replay || plan.io_unstaged) return false;
  const auto& values = exec.values();
  // Staging mirrors the primary backend's I/O region: a value there sits at its offset in it,
  // so that values next to each other on the device are next to each other here and one copy
  // moves them all (the inputs are laid out together, then the outputs). Values elsewhere (an
  // output accumulated in place) come after.
  const auto* io = static_cast<const uint8_t*>(plan.io_region[0]);
  const size_t io_bytes = plan.io_bytes[0];
  size_t bytes = (io_bytes + kAlign - 1) / kAlign * kAlign;
  struct Span {
    size_t host;
    uint8_t* device;
    size_t bytes;
    bool in_io;  // in the I/O region; elsewhere, its own allocation (a state, the zeroed region)
  };
  auto place = [&](int v) {
    auto* p = static_cast<uint8_t*>(plan.ptr[v]);
    const size_t n = value_bytes(values[v].dtype, plan.shapes[v]);
    const auto address = reinterpret_cast<uintptr_t>(p), start = reinterpret_cast<uintptr_t>(io);
    if (io && address >= start && address + n <= start + io_bytes)
      return Span{static_cast<size_t>(address - start), p, n, true};
    const size_t at = bytes;
    bytes += (n + kAlign - 1) / kAlign * kAlign;
    return Span{at, p, n, false};
  };
  std::vector<Span> up, down;
  plan.staged_input.clear();
  plan.staged_output.clear();
  for (int v : exec.inputs()) {
    up.push_back(place(v));
    plan.staged_input[v] = up.back().host;
  }
  for (const auto& o : exec.outputs()) down.push_back(place(o.value));
  for (int t : taps) down.push_back(place(t));
  for (const Span& d : down) plan.staged_output.push_back(d.host);
  if (bytes > kMaxStagedBytes || !(plan.staging = primary().allocate_host(bytes))) {
    plan.io_unstaged = true;
    return false;
  }
  // Spans of the I/O region next to each other on both sides (up to alignment padding, which is
  // no value's memory) or overlapping (two outputs of one value) become one copy. Values outside
  // it never merge: two allocations may lie next to each other in the address space, and one
  // copy across both is refused (two caches that a graph outputs, two states).
  auto merged = [&](std::vector<Span> spans) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.host < b.host; });
    std::vector<Span> out;
    for (const Span& sp : spans) {
      if (!out.empty() && sp.in_io && out.back().in_io) {
        Span& last = out.back();
        const size_t ahead = sp.host - last.host;
        if (ahead <= (last.bytes + kAlign - 1) / kAlign * kAlign && sp.device == last.device + ahead) {
          last.bytes = std::max(last.bytes, ahead + sp.bytes);
          continue;
        }
      }
      out.push_back(sp);
    }
    return out;
  };
  auto* host = static_cast<uint8_t*>(plan.staging);
  plan.io_replay = primary().capture([&] {
    for (const Span& sp : merged(up)) primary().upload_queued(sp.device, host + sp.host, sp.bytes);
    execute(plan);
    for (const Span& sp : merged(down)) primary().download_queued(host + sp.host, sp.device, sp.bytes);
    primary().queue_error_readback();
  });
  return true;
}

std::vector<HostTensor> Engine::run(const std::vector<HostTensor>& inputs, const std::vector<std::string>& taps) {
  Impl& m = *impl_;
  const Bindings b = bind(inputs);
  std::vector<int> tap_values;
  for (const auto& t : taps) {
    const auto it = m.named.find(t);
    KILN_CHECK(it != m.named.end(), "[engine] the graph has no value named '{}'", t);
    tap_values.push_back(it->second);
  }
  Plan& plan = m.plan_for(b, tap_values);
  std::vector<std::pair<int, const HostTensor*>> given;
  for (const auto& t : inputs) {
    const int v = m.named.at(t.name);  // bind found every one
    const Value& val = m.exec.values()[v];
    KILN_CHECK(t.dtype == val.dtype, "[engine] input '{}' must be {}, got {}", t.name, dtype_name(val.dtype),
               dtype_name(t.dtype));
    KILN_CHECK(t.data.size() == value_bytes(val.dtype, plan.shapes[v]),
               "[engine] input '{}' holds {} bytes for shape {}", t.name, t.data.size(), to_string(t.shape));
    given.emplace_back(v, &t);
  }
  std::vector<HostTensor> out;
  std::vector<int> read;  // the values of out, in order
  for (const auto& o : m.exec.outputs()) {
    out.push_back(HostTensor::zeros(o.name, m.exec.values()[o.value].dtype, plan.shapes[o.value]));
    read.push_back(o.value);
  }
  for (size_t i = 0; i < taps.size(); ++i) {
    out.push_back(HostTensor::zeros(taps[i], m.exec.values()[tap_values[i]].dtype, plan.shapes[tap_values[i]]));
    read.push_back(tap_values[i]);
  }
  // (A caller may also set a state by name: that takes the direct copies.)
  const bool staged = m.stage_io(plan, tap_values) && std::all_of(given.begin(), given.end(), [&](const auto& g) {
                        return plan.staged_input.count(g.first) > 0;
                      });
  if (staged) {
    auto* host = static_cast<uint8_t*>(plan.staging);
    for (const auto& [v, t] : given) std::memcpy(host + plan.staged_input.at(v), t->data.data(), t->data.size());
    plan.io_replay->launch();
    m.primary().synchronize();
    for (size_t k = 0; k < out.size(); ++k)
      std::memcpy(out[k].data.data(), host + plan.staged_output[k], out[k].data.size());
  } else {
    for (const auto& [v, t] : given)
      m.backends[m.value_backend[v]]->upload(plan.ptr[v], t->data.data(), t->data.size());
    if (plan.replay)
      plan.replay->launch();
    else
      m.execute(plan);
    for (size_t k = 0; k < out.size(); ++k)
      m.backends[m.value_backend[m.root[read[k]]]]->download(out[k].data.data(), plan.ptr[read[k]], out[k].data.size());
    for (auto& backend : m.backends) {
      backend->queue_error_readback();
      backend->synchronize();
    }
  }
  for (auto& backend : m.backends) backend->check_errors();
  return out;
}

void Engine::prepare(const Bindings& b) { impl_->plan_for(b, {}); }

std::vector<double> Engine::benchmark(const Bindings& b, int warmup, int samples, int calls_per_sample,
                                      const std::vector<HostTensor>& inputs) {
  Impl& m = *impl_;
  Plan& plan = m.plan_for(b, {});
  m.fill_inputs(plan, inputs);
  auto call = [&] {
    if (plan.replay)
      plan.replay->launch();
    else
      m.execute(plan);
  };
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> ms;
  for (int s = 0; s < samples; ++s)
    ms.push_back(m.primary().time_ms([&] {
      for (int c = 0; c < calls_per_sample; ++c) call();
    }) / calls_per_sample);
  return ms;
}

std::map<std::string, double> Engine::profile(const Bindings& b, int iterations) {
  return group_sums(profile_nodes(b, iterations));
}

std::map<std::string, double> Engine::group_sums(const std::vector<double>& per_node) const {
  const auto& nodes = impl_->exec.nodes();
  std::map<std::string, double> sums;
  for (size_t i = 0; i < nodes.size() && i < per_node.size(); ++i)
    sums[nodes[i].group.empty() ? nodes[i].op : nodes[i].group] += per_node[i];
  return sums;
}

std::vector<double> Engine::node_bytes(const Bindings& b) const {
  const Impl& m = *impl_;
  const Plan* plan = m.planned(b);
  KILN_CHECK(plan, "[engine] node_bytes: no plan for these sizes (prepare first)");
  const auto& nodes = m.exec.nodes();
  std::vector<double> bytes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const KernelArgs& a = plan->args[i];
    // A view (reshape) moves nothing, and an in-place update of a state only its other inputs:
    // the aliased input and output are left out. (Copies between devices have no kernel and
    // move their input.)
    std::set<size_t> aliased_inputs, aliased_outputs;
    for (size_t o = 0; m.kernels[i] && o < n.outputs.size(); ++o)
      if (const int in = n.def().aliases_input(static_cast<int>(o)); in >= 0) {
        aliased_outputs.insert(o);
        aliased_inputs.insert(static_cast<size_t>(in));
      }
    std::set<int> read;  // a value taken twice (mul(x, x)) is read once
    double sum = 0;
    for (size_t k = 0; k < a.inputs.size(); ++k)
      // (n.inputs, not data: a kernel that packs a constant itself leaves the engine's pointer empty)
      if (n.inputs[k] >= 0 && !aliased_inputs.count(k) && read.insert(n.inputs[k]).second)
        sum += static_cast<double>(a.inputs[k].bytes());
    for (size_t o = 0; o < a.outputs.size(); ++o)
      if (!aliased_outputs.count(o)) sum += static_cast<double>(a.outputs[o].bytes());
    bytes.push_back(sum);
  }
  return bytes;
}

std::vector<double> Engine::profile_nodes(const Bindings& b, int iterations, const std::vector<HostTensor>& inputs) {
  Impl& m = *impl_;
  Plan& plan = m.plan_for(b, {});
  m.fill_inputs(plan, inputs);
  m.execute(plan);
  const auto& nodes = m.exec.nodes();
  std::vector<double> ms(nodes.size(), 0.0);
  for (int it = 0; it < iterations; ++it) {
    for (size_t bi = 0; bi < m.backends.size(); ++bi)
      if (plan.zero_bytes[bi]) m.backends[bi]->zero(plan.zero_region[bi], plan.zero_bytes[bi]);
    for (size_t i = 0; i < nodes.size(); ++i)
      ms[i] += m.backends[m.node_backend[i]]->time_ms([&] { m.run_node(plan, static_cast<int>(i)); }) / iterations;
  }
  return ms;
}

std::vector<std::string> Engine::plan_summary(const Bindings& b) const {
  const Impl& m = *impl_;
  std::vector<std::string> out;
  const Plan* plan = m.planned(b);
  const auto& nodes = m.exec.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    std::string line = fmt::format("{} {} [{}]", n.op, n.name, n.device);
    if (m.kernels[i]) {
      const std::string d = m.kernels[i]->describe();
      if (!d.empty()) line += " " + d;
      if (plan && m.kernels[i]->variants() > 1) line += " " + m.kernels[i]->variant_name(plan->variants[i]);
    }
    out.push_back(line);
  }
  return out;
}

nlohmann::json Engine::export_plans() const {
  const Impl& m = *impl_;
  nlohmann::json plans = nlohmann::json::object();
  for (const auto& [key, plan] : m.plans) {
    nlohmann::json choices = nlohmann::json::object();
    for (size_t i = 0; i < m.exec.nodes().size(); ++i)
      if (m.has_choice(i)) choices[m.exec.nodes()[i].name] = m.kernels[i]->variant_name(plan->variants[i]);
    if (key.find('|') == std::string::npos) plans[key] = choices;
  }
  return {{m.backends[0]->name(),
           {{"device", m.backends[0]->hardware()}, {"precision", m.options.precision}, {"plans", plans}}}};
}

int64_t Engine::activation_bytes() const {
  int64_t most = 0;
  for (const auto& [key, plan] : impl_->plans) {
    int64_t sum = 0;
    for (size_t b = 0; b < plan->arena_bytes.size(); ++b)
      sum += plan->arena_bytes[b] + plan->zero_bytes[b] + plan->io_bytes[b];
    most = std::max(most, sum);
  }
  return most;
}

}  // namespace kiln
