#include <fmt/format.h>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "checkpoints/safetensors.h"
#include "cli/commands.h"
#include "core/error.h"

namespace kiln::cli {

// Runs a bundle's graph on a tensor from a safetensors file: parity checks against other
// frameworks use it with the exact same input.
Command add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a bundle on an input tensor (safetensors 'input' [N, C, H, W])");
  struct Args {
    std::string bundle, input, output, device = "auto", name = "input";
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_option("--input", args->input, "safetensors file holding the input tensor")->required();
  cmd->add_option("--tensor", args->name, "Name of the input tensor in that file");
  cmd->add_option("-o,--output", args->output, "safetensors file to write ('output' [N, ...])")->required();
  cmd->add_option("--device", args->device, "cpu, cuda, or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  return [args] {
    auto bundle = Bundle::open(args->bundle);
    Tensor in = SafetensorsFile(args->input).to_float(args->name);
    const auto& g = bundle->graph();
    KILN_CHECK(in.shape.size() == 4 && in.shape[1] == g.values()[g.input()].channels && in.shape[0] >= 1,
               "[run] input must be [N, {}, H, W], got {}", g.values()[g.input()].channels, shape_string(in.shape));
    auto engine =
        make_engine(args->device, g, bundle->weights(), bundle->manifest().value("plans", nlohmann::json::object()));
    const int n = static_cast<int>(in.shape[0]), h = static_cast<int>(in.shape[2]), w = static_cast<int>(in.shape[3]);
    Tensor out({n, engine->output_elements(h, w)});
    engine->run(in.data.data(), n, h, w, out.data.data());
    write_safetensors(args->output, {{"output", out}});
    fmt::print("ran {} x {}x{} on {}: wrote {}\n", n, h, w, engine->device(), args->output);
    return 0;
  };
}

}  // namespace kiln::cli
