// kiln::Model: any bundle on named tensors; one engine per graph, made at its first run, all
// sharing the model's states.
#include <chrono>
#include <map>
#include <mutex>

#include "api/model_access.h"
#include "api/model_info.h"
#include "backends/engine.h"
#include "bundle/bundle.h"
#include "core/error.h"
#include "kiln/kiln.h"

namespace kiln {

struct Model::Impl {
  std::shared_ptr<Bundle> bundle;
  std::string device;
  ModelInfo info;
  std::shared_ptr<StateStore> states = std::make_shared<StateStore>();
  std::map<std::string, std::unique_ptr<Engine>> engines;
  std::map<std::string, GraphTime> times;
  ModelAccess::Observer observer;

  const std::string& graph_name(const std::string& g) const { return g.empty() ? bundle->main_graph() : g; }
  Engine& engine(const std::string& g) {
    const std::string& name = graph_name(g);
    auto& e = engines[name];
    if (!e) {
      const auto start = std::chrono::steady_clock::now();
      e = std::make_unique<Engine>(bundle->graph(name), bundle->constants(), bundle->engine_options(device), states);
      times[name].setup_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (observer) observe(name, *e);
    }
    return *e;
  }
  void observe(const std::string& name, Engine& e) {
    const Graph& g = bundle->graph(name);
    e.set_observer(
        [this, &g, name](int node, const float* x, int64_t count) { observer(name, g.nodes()[node].name, x, count); });
  }
};

void ModelAccess::observe(Model& model, Observer observer) {
  Model::Impl& i = *model.impl_;
  i.observer = std::move(observer);
  for (auto& [name, e] : i.engines) i.observe(name, *e);
}

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

Status Model::load(const std::string& path, std::unique_ptr<Model>* out, const std::string& device) {
  try {
    KILN_CHECK(device == "cpu" || device == "cpu-reference" || device == "cuda" || device == "auto",
               "[model] unknown device '{}'", device);
    std::unique_ptr<Model> m(new Model());
    Impl& i = *m->impl_;
    i.bundle = Bundle::open(path);
    i.device = device;
    i.info = bundle_model_info(*i.bundle, i.engine("").device());
    *out = std::move(m);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

const ModelInfo& Model::info() const { return impl_->info; }

std::vector<std::string> Model::graphs() const {
  std::vector<std::string> out;
  for (const auto& [name, g] : impl_->bundle->graphs()) out.push_back(name);
  return out;
}

std::string Model::default_graph() const { return impl_->bundle->main_graph(); }

namespace {

TensorSpec spec_of(const Value& v, const std::string& name) {
  TensorSpec s{name, v.dtype, {}, {}};
  for (const Dim& d : v.shape) {
    s.shape.push_back(d.is_symbol() ? -1 : d.value);
    s.symbols.push_back(d.symbol);
  }
  return s;
}

}  // namespace

std::vector<TensorSpec> Model::inputs(const std::string& graph) const {
  const Graph& g = impl_->bundle->graph(impl_->graph_name(graph));
  std::vector<TensorSpec> out;
  for (int v : g.inputs()) out.push_back(spec_of(g.values()[v], g.values()[v].name));
  return out;
}

std::vector<TensorSpec> Model::outputs(const std::string& graph) const {
  const Graph& g = impl_->bundle->graph(impl_->graph_name(graph));
  const auto shapes = g.infer_shapes(g.example_bindings());
  std::vector<TensorSpec> out;
  for (const auto& o : g.outputs()) {
    TensorSpec s{o.name, g.values()[o.value].dtype, shapes[o.value], {}};
    s.symbols.assign(s.shape.size(), "");
    out.push_back(std::move(s));
  }
  return out;
}

Status Model::run(const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs, const std::string& graph) {
  try {
    const auto start = std::chrono::steady_clock::now();
    Engine& engine = impl_->engine(graph);
    const Engine::Planning before = engine.planning();
    *outputs = engine.run(inputs);
    const Engine::Planning after = engine.planning();
    GraphTime& t = impl_->times[impl_->graph_name(graph)];
    ++t.calls;
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    t.plans += after.plans - before.plans;
    t.planning_seconds += after.seconds - before.seconds;
    t.tuning_seconds += after.tuning_seconds - before.tuning_seconds;
    t.timed += after.timed - before.timed;
    t.cached += after.cached - before.cached;
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

void Model::reset_states() { impl_->states->reset(); }

std::vector<Model::GraphTime> Model::run_times() const {
  std::vector<GraphTime> out;
  for (const auto& [name, t] : impl_->times) {
    out.push_back(t);
    out.back().graph = name;
  }
  return out;
}

void Model::reset_run_times() { impl_->times.clear(); }

std::string Model::task_settings_json() const { return impl_->bundle->manifest().at("task").dump(); }

}  // namespace kiln
