#include "validate/gates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "checkpoints/checkpoint.h"
#include "checkpoints/safetensors.h"
#include "core/error.h"
#include "kiln/kiln.h"
#include "tasks/classification/evaluate.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

class Gates {
 public:
  Gates(const Manifest& m, std::string data, std::string work)
      : m_(m), data_(std::move(data)), work_(std::move(work)) {}

  // The bundle of a build of a checkpoint, built once per manifest and run: a bundle left in
  // the work folder by an earlier run (an older kiln, another manifest's recipe) is built again.
  std::string bundle(const std::string& checkpoint, const std::string& precision) {
    const std::string path = (fs::path(work_) / fmt::format("{}-{}-{}.bundle", fs::path(m_.file).stem().string(),
                                                            fs::path(checkpoint).filename().string(), precision))
                                 .string();
    if (built_.count(path)) return path;
    auto build = std::find_if(m_.builds.begin(), m_.builds.end(),
                              [&](const ManifestBuild& b) { return b.precision == precision; });
    KILN_CHECK(build != m_.builds.end() || precision == "fp32", "[validate] no {} build", precision);
    BuildOptions o;
    o.precision = precision;
    if (build != m_.builds.end()) {
      o.batch_sizes = build->batch_sizes;
      o.recipe = build->recipe;
      if (!build->calibration.empty()) o.calib = (fs::path(data_) / build->calibration).string();
      o.calib_samples = static_cast<size_t>(build->calibration_samples);
    }
    BuildResult r;
    const Status s = kiln::build((fs::path(data_) / checkpoint).string(), path, o, &r);
    KILN_CHECK(s.ok(), "{}", s.message());
    KILN_CHECK(r.architecture == m_.architecture, "[validate] {} is a {}, the manifest pins a {}", checkpoint,
               r.architecture, m_.architecture);
    built_.insert(path);
    return path;
  }

  GateResult parity(const ManifestGate& g) {
    auto b = Bundle::open(bundle(g.checkpoint, g.build));
    const Graph& graph = b->graph(b->main_graph());
    KILN_CHECK(graph.inputs().size() == 1, "[validate] parity gates need a graph with one input");
    SafetensorsFile ref((fs::path(data_) / g.reference).string());
    HostTensor in = ref.to_host(g.inputs);
    in.name = graph.values()[graph.inputs()[0]].name;
    Engine engine(graph, b->constants(), b->engine_options(g.device));
    const std::vector<float> got = engine.run({in})[0].to_f32();
    const Tensor want = ref.to_float(g.outputs);
    KILN_CHECK(got.size() == want.data.size(), "[validate] {} has {} values, the graph's output {}", g.outputs,
               want.data.size(), got.size());
    double max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - want.data[i]));
    const int64_t row = want.shape.back(), rows = static_cast<int64_t>(want.data.size()) / row;
    int64_t agree = 0;
    for (int64_t r = 0; r < rows; ++r) {
      auto top = [&](const float* v) { return std::max_element(v, v + row) - v; };
      agree += top(got.data() + r * row) == top(want.data.data() + r * row);
    }
    GateResult out{g.name, "passed", "", {{"max_abs_diff", max_diff}, {"top1_agreement", double(agree) / rows}}};
    check(out, "max |diff|", max_diff, g.max_abs_diff, false);
    check(out, "top-1 agreement", double(agree) / rows, g.min_top1_agreement, true);
    return out;
  }

  GateResult generation(const ManifestGate& g) {
    std::unique_ptr<TextGenerator> t;
    Status s = TextGenerator::load(bundle(g.checkpoint, g.build), &t, g.device);
    KILN_CHECK(s.ok(), "{}", s.message());
    const nlohmann::json ref = read_json_file((fs::path(data_) / g.reference).string(), "validate");
    KILN_CHECK(ref.is_object() && ref.contains("examples") && ref["examples"].is_array(),
               "[validate] {} has no examples", g.reference);
    std::vector<std::vector<int64_t>> sources, want;
    for (const auto& e : ref["examples"]) {
      sources.push_back(e.at("source_ids").get<std::vector<int64_t>>());
      want.push_back(e.at(g.generation + "_ids").get<std::vector<int64_t>>());
    }
    GenerationOptions o;
    if (g.generation == "greedy") o.num_beams = 1;
    o.max_new_tokens = g.max_new_tokens;
    std::vector<GeneratedText> out;
    s = t->generate_ids(sources, o, &out);
    KILN_CHECK(s.ok(), "{}", s.message());
    int64_t same = 0;
    for (size_t i = 0; i < out.size(); ++i) same += out[i].ids == want[i];
    const double share = out.empty() ? 0.0 : static_cast<double>(same) / static_cast<double>(out.size());
    GateResult r{g.name, "passed", "", {{"identical", same}, {"sources", out.size()}}};
    check(r, "identical outputs", share, g.min_identical, true);
    r.detail += fmt::format(" ({} of {}, {})", same, out.size(), g.generation);
    return r;
  }

  GateResult eval(const ManifestGate& g) {
    const std::string path = bundle(g.checkpoint, g.build);
    const std::string task = Bundle::open(path)->manifest().at("task").value("type", "");
    KILN_CHECK(task == "image_classification", "[validate] eval gates are not available for task '{}'", task);
    classification::EvalOptions o;
    o.data = (fs::path(data_) / g.data).string();
    o.limit = static_cast<size_t>(g.limit);
    o.device = g.device;
    o.progress = false;
    if (g.against == "cpu") o.reference = "cpu";
    if (g.against == "fp32") o.reference = bundle(g.checkpoint, "fp32");
    const auto r = classification::evaluate(path, o);
    GateResult out{g.name, "passed", "", r.to_json()};
    KILN_CHECK(r.nonfinite == 0, "[validate] {} non-finite outputs", r.nonfinite);
    check(out, "top-1 %", r.top1, g.min_top1, true);
    check(out, "agreement %", r.agreement, g.min_agreement, true);
    out.detail += fmt::format(" on {} images", r.images);
    return out;
  }

 private:
  static void check(GateResult& r, const char* what, double value, const std::optional<double>& bound, bool at_least) {
    if (!bound) return;
    const bool ok = at_least ? value >= *bound : value <= *bound;
    if (!ok) r.status = "failed";
    r.detail += fmt::format("{}{} {:.6g} {} {:.6g}", r.detail.empty() ? "" : ", ", what, value,
                            ok ? (at_least ? ">=" : "<=") : (at_least ? "<" : ">"), *bound);
  }

  const Manifest& m_;
  std::string data_, work_;
  std::set<std::string> built_;
};

}  // namespace

std::vector<GateResult> run_gates(const Manifest& m, const std::string& data_dir, const std::string& work_dir,
                                  const std::function<void(const GateResult&)>& report) {
  fs::create_directories(work_dir);
  Gates gates(m, data_dir, work_dir);
  std::vector<GateResult> results;
  for (const auto& g : m.gates) {
    GateResult r;
    if (g.device == "cuda" && !cuda_available()) {
      r = {g.name, "skipped", "needs a CUDA GPU"};
    } else {
      try {
        r = g.kind == "parity" ? gates.parity(g) : g.kind == "generation" ? gates.generation(g) : gates.eval(g);
      } catch (const std::exception& e) {
        r = {g.name, "failed", e.what()};
      }
    }
    report(r);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace kiln
