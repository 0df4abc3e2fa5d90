#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "bundle/bundle.h"
#include "cli/commands.h"
#include "core/checked_math.h"

namespace kiln::cli {

Command add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Show what a bundle holds (validates it fully)");
  struct Args {
    std::string bundle;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_flag("--json", args->json, "Print the manifest (without the graph and tensor table) as JSON");
  return [args] {
    auto b = Bundle::open(args->bundle);
    const auto& m = b->manifest();
    uint64_t params = 0;
    for (const auto& [name, t] : b->tensors()) params += checked_numel(t.shape, "tensor");
    std::map<std::string, int> ops;
    for (const auto& n : b->graph().nodes()) ops[op_name(n.op)]++;
    if (args->json) {
      nlohmann::json j = m;
      j.erase("graph");
      j.erase("tensors");
      if (j.contains("task")) j["task"].erase("labels");
      j["summary"] = {{"file_bytes", b->file_size()},
                      {"parameters", params},
                      {"tensors", b->tensors().size()},
                      {"nodes", b->graph().nodes().size()},
                      {"ops", ops}};
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    const auto& model = m.at("model");
    fmt::print("bundle       {} ({:.1f} MiB, format v{}, kiln {})\n", args->bundle, b->file_size() / 1048576.0,
               m.value("format_version", 0), m.value("kiln_version", ""));
    fmt::print("model        {} @ {}\n", model.value("id", ""),
               model.value("revision", "") == "" ? "local" : model.value("revision", ""));
    fmt::print("architecture {} (family {})\n", model.value("architecture", ""), model.value("family", ""));
    fmt::print("task         {}, {} classes\n", m.at("task").value("type", ""),
               m.at("task").value("labels", nlohmann::json::array()).size());
    fmt::print("precision    {}; batch sizes {}\n", m.value("precision", ""),
               m.at("input").value("batch_sizes", nlohmann::json::array()).dump());
    fmt::print("input        {} {}\n", m.at("input").value("layout", ""),
               m.at("input").value("shape", nlohmann::json::array()).dump());
    fmt::print("preprocess   {}\n", m.at("task").value("preprocess", nlohmann::json::object()).dump());
    fmt::print("graph        {} nodes:", b->graph().nodes().size());
    for (const auto& [op, count] : ops) fmt::print(" {} {}", count, op);
    fmt::print("\nweights      {} tensors, {} parameters\n", b->tensors().size(), params);
    fmt::print("created      {}\n", m.value("created", ""));
    return 0;
  };
}

}  // namespace kiln::cli
