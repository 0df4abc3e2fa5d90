#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "bundle/bundle.h"
#include "cli/commands.h"
#include "core/checked_math.h"
#include "core/dtype.h"

namespace kiln::cli {

namespace {

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> ops;
  for (const auto& n : g.nodes()) ops[n.op]++;
  return ops;
}

std::string describe(const nlohmann::json& specs) {
  std::vector<std::string> parts;
  for (const auto& s : specs) {
    std::string text = fmt::format("{} {}", s.at("name").get<std::string>(), s.at("dtype").get<std::string>());
    if (s.contains("shape")) {
      std::vector<std::string> dims;
      for (const auto& d : s["shape"]) dims.push_back(d.is_string() ? d.get<std::string>() : d.dump());
      text += fmt::format(" [{}]", fmt::join(dims, ", "));
    }
    parts.push_back(text);
  }
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

Command add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Show what a bundle holds (validates it fully)");
  struct Args {
    std::string bundle;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_flag("--json", args->json,
                "Print the manifest as JSON: each graph's inputs and outputs instead of its nodes, no tensor table");
  return [args] {
    auto b = Bundle::open(args->bundle);
    const auto& m = b->manifest();
    uint64_t params = 0;
    for (const auto& [name, t] : b->tensors()) params += checked_numel(t.shape, "tensor");
    if (args->json) {
      nlohmann::json j = m;
      j.erase("tensors");
      if (j.contains("task")) j["task"].erase("labels");
      for (auto& [name, entry] : j["graphs"].items()) {
        const Graph& g = b->graph(name);
        entry = graph_interface(g);
        entry["nodes"] = g.nodes().size();
        entry["ops"] = op_counts(g);
      }
      j["summary"] = {{"file_bytes", b->file_size()}, {"parameters", params}, {"tensors", b->tensors().size()}};
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    const auto& model = m.at("model");
    const auto& task = m.at("task");
    fmt::print("bundle       {} ({:.1f} MiB, format v{}, kiln {})\n", args->bundle, b->file_size() / 1048576.0,
               b->format_version(), m.value("kiln_version", ""));
    fmt::print("model        {} @ {}\n", model.value("id", ""),
               model.value("revision", "") == "" ? "local" : model.value("revision", ""));
    fmt::print("architecture {} (family {})\n", model.value("architecture", ""), model.value("family", ""));
    fmt::print("task         {}", task.value("type", ""));
    if (task.contains("labels")) fmt::print(", {} classes", task["labels"].size());
    fmt::print("\nprecision    {}; built for batch sizes {}\n", b->precision(),
               m.value("build", nlohmann::json::object()).value("batch_sizes", nlohmann::json::array()).dump());
    for (const auto& [name, g] : b->graphs()) {
      const auto io = graph_interface(g);
      fmt::print("graph {:<6} inputs: {}\n", name, describe(io["inputs"]));
      fmt::print("             outputs: {}\n", describe(io["outputs"]));
      if (!io["states"].empty()) fmt::print("             states: {}\n", describe(io["states"]));
      fmt::print("             {} nodes:", g.nodes().size());
      for (const auto& [op, count] : op_counts(g)) fmt::print(" {} {}", count, op);
      fmt::print("\n");
    }
    // Named copies: items() of a temporary would outlive it in the loop.
    const nlohmann::json backends = m.value("plans", nlohmann::json::object());
    for (const auto& [backend, plan] : backends.items()) {
      const nlohmann::json plans = plan.value("plans", nlohmann::json::object());
      std::vector<std::string> sizes;
      for (const auto& [key, choices] : plans.items()) sizes.push_back(key);
      fmt::print("planned      {} on {}: {}\n", backend, plan.value("device", ""), fmt::join(sizes, ", "));
    }
    if (backends.empty()) fmt::print("planned      nothing: kernels are chosen when an engine loads it\n");
    fmt::print("weights      {} tensors, {} parameters\n", b->tensors().size(), params);
    if (task.contains("preprocess")) fmt::print("preprocess   {}\n", task["preprocess"].dump());
    fmt::print("created      {}\n", m.value("created", ""));
    return 0;
  };
}

}  // namespace kiln::cli
