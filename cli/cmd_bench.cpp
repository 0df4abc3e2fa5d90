#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "bundle/bundle.h"
#include "cli/commands.h"
#include "tasks/classification/classifier.h"

namespace kiln::cli {

namespace {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  double pos = p * (v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time a bundle's engine (on the GPU: CUDA-graph replays, input on the GPU)");
  struct Args {
    std::string bundle, batch = "1", device = "auto";
    int iters = 50, warmup = 10, calls = 0;
    bool json = false, profile = false, plan = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_option("--batch", args->batch, "Batch sizes, e.g. 1,32,128");
  cmd->add_option("--iters", args->iters, "Timed samples per batch size")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", args->warmup, "Untimed calls first")->check(CLI::Range(0, 100000));
  cmd->add_option("--calls", args->calls, "Calls per timed sample (default: 20 on the GPU, 1 on the CPU)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--device", args->device, "cpu, cuda, or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_flag("--json", args->json, "One JSON object per batch size");
  cmd->add_flag("--profile", args->profile, "Also report kernel time per layer group");
  cmd->add_flag("--plan", args->plan, "Also list the kernels and the GEMM tile chosen for each");
  return [args] {
    const std::vector<int> batches = parse_batch_list(args->batch, "bench");
    auto bundle = Bundle::open(args->bundle);
    classification::ImageClassifier model(bundle, args->device);
    Engine& engine = model.engine();
    const auto& pre = model.preprocess_config();
    const bool gpu = engine.device() != "cpu";
    const int calls = args->calls > 0 ? args->calls : (gpu ? 20 : 1);
    if (!args->json)
      fmt::print("{} {} on {} ({}x{}), {} samples of {} calls\n{:>6} {:>10} {:>9} {:>9} {:>9} {:>11} {:>11}\n",
                 bundle->manifest()["model"].value("architecture", ""), bundle->manifest().value("precision", ""),
                 engine.device(), pre.width, pre.height, args->iters, calls, "batch", "median ms", "p10 ms", "p90 ms",
                 "min ms", "images/s", "act. MiB");
    for (int batch : batches) {
      engine.prepare(batch, pre.height, pre.width);
      auto ms = engine.benchmark(batch, pre.height, pre.width, args->warmup, args->iters, calls);
      double median = percentile(ms, 0.5);
      std::map<std::string, double> groups;
      if (args->profile) groups = engine.profile(batch, pre.height, pre.width, 20);
      if (args->json) {
        nlohmann::json j = {{"device", engine.device()},
                            {"precision", bundle->manifest().value("precision", "")},
                            {"batch", batch},
                            {"median_ms", median},
                            {"p10_ms", percentile(ms, 0.1)},
                            {"p90_ms", percentile(ms, 0.9)},
                            {"min_ms", *std::min_element(ms.begin(), ms.end())},
                            {"images_per_s", batch * 1000.0 / median},
                            {"activation_bytes", engine.activation_bytes()},
                            {"bundle_bytes", bundle->file_size()}};
        if (args->profile) j["profile_ms"] = groups;
        if (args->plan) j["plan"] = engine.plan_summary(batch);
        fmt::print("{}\n", j.dump());
        continue;
      }
      fmt::print("{:>6} {:>10.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>11.1f} {:>11.1f}\n", batch, median, percentile(ms, 0.1),
                 percentile(ms, 0.9), *std::min_element(ms.begin(), ms.end()), batch * 1000.0 / median,
                 engine.activation_bytes() / 1048576.0);
      if (args->profile) {
        double total = 0;
        for (const auto& [g, t] : groups) total += t;
        for (const auto& [g, t] : groups) fmt::print("         {:<20} {:8.3f} ms {:5.1f}%\n", g, t, 100 * t / total);
        fmt::print("         {:<20} {:8.3f} ms (kernels launched one by one)\n", "total", total);
      }
      if (args->plan)
        for (const auto& line : engine.plan_summary(batch)) fmt::print("         {}\n", line);
    }
    fmt::print(stderr, "bundle {:.1f} MiB\n", bundle->file_size() / 1048576.0);
    return 0;
  };
}

}  // namespace kiln::cli
