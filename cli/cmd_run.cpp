#include <fmt/format.h>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "checkpoints/safetensors.h"
#include "cli/commands.h"
#include "core/error.h"

namespace kiln::cli {

// Runs a bundle's graph on tensors from a safetensors file and writes every output: parity
// checks against other frameworks use it with the exact same inputs.
Command add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a bundle's graph on tensors from a safetensors file");
  struct Args {
    std::string bundle, input, output, graph, device = "auto";
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_option("--input", args->input,
                  "safetensors file with a tensor per graph input, named like it (one tensor for a one-input graph "
                  "may have any name)")
      ->required();
  cmd->add_option("-o,--output", args->output, "safetensors file to write, a tensor per graph output")->required();
  cmd->add_option("--graph", args->graph, "Which graph (default: the one the bundle's task runs)");
  add_device_option(cmd, args->device);
  return [args] {
    auto bundle = Bundle::open(args->bundle);
    const std::string graph_name = args->graph.empty() ? bundle->main_graph() : args->graph;
    const Graph& g = bundle->graph(graph_name);
    SafetensorsFile file(args->input);
    std::vector<HostTensor> inputs;
    const auto graph_inputs = g.inputs();
    for (int v : graph_inputs) {
      const std::string& name = g.values()[v].name;
      std::string stored = name;
      if (!file.contains(name) && graph_inputs.size() == 1 && file.tensors().size() == 1)
        stored = file.tensors().begin()->first;
      KILN_CHECK(file.contains(stored), "[run] {} has no tensor '{}' for the graph's input", args->input, name);
      HostTensor t = file.to_host(stored);
      t.name = name;
      inputs.push_back(std::move(t));
    }
    Engine engine(g, bundle->constants(), bundle->engine_options(args->device));
    const auto outputs = engine.run(inputs);
    write_safetensors(args->output, outputs);
    std::string sizes;
    for (const auto& [symbol, size] : engine.bind(inputs)) sizes += fmt::format(" {}={}", symbol, size);
    fmt::print("ran graph {} ({}) on {}: wrote {} output{} to {}\n", graph_name, sizes.empty() ? "" : sizes.substr(1),
               engine.device(), outputs.size(), outputs.size() == 1 ? "" : "s", args->output);
    return 0;
  };
}

}  // namespace kiln::cli
