#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>

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

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || v > 4096) throw std::runtime_error("[bench] bad batch size '" + item + "'");
    out.push_back(v);
  }
  return out;
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time a bundle's engine on random preprocessed input");
  struct Args {
    std::string bundle, batch = "1";
    int iters = 50, warmup = 5;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_option("--batch", args->batch, "Batch sizes, e.g. 1,8");
  cmd->add_option("--iters", args->iters, "Timed runs per batch size")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->check(CLI::Range(0, 100000));
  cmd->add_flag("--json", args->json, "One JSON object per batch size");
  return [args] {
    auto bundle = Bundle::open(args->bundle);
    classification::ImageClassifier model(bundle);
    const auto& pre = model.preprocess_config();
    std::mt19937 rng(0);
    std::normal_distribution<float> dist;
    if (!args->json)
      fmt::print("{} on cpu ({}x{}), {} iterations\n{:>6} {:>10} {:>9} {:>9} {:>9} {:>10} {:>12}\n",
                 bundle->manifest()["model"].value("architecture", ""), pre.width, pre.height, args->iters, "batch",
                 "median ms", "p10 ms", "p90 ms", "min ms", "images/s", "arena MiB");
    for (int batch : parse_list(args->batch)) {
      std::vector<float> input(static_cast<size_t>(batch) * pre.channels * pre.height * pre.width);
      for (auto& v : input) v = dist(rng);
      std::vector<float> logits(static_cast<size_t>(batch) * model.num_classes());
      for (int i = 0; i < args->warmup; ++i) model.run(input.data(), batch, logits.data());
      std::vector<double> ms;
      for (int i = 0; i < args->iters; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        model.run(input.data(), batch, logits.data());
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      double median = percentile(ms, 0.5);
      double arena_mib = model.engine().arena_bytes() / 1048576.0;
      if (args->json) {
        nlohmann::json j = {{"device", "cpu"},
                            {"batch", batch},
                            {"median_ms", median},
                            {"p10_ms", percentile(ms, 0.1)},
                            {"p90_ms", percentile(ms, 0.9)},
                            {"min_ms", *std::min_element(ms.begin(), ms.end())},
                            {"images_per_s", batch * 1000.0 / median},
                            {"activation_bytes", model.engine().arena_bytes()},
                            {"bundle_bytes", bundle->file_size()}};
        fmt::print("{}\n", j.dump());
      } else {
        fmt::print("{:>6} {:>10.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>10.1f} {:>12.1f}\n", batch, median,
                   percentile(ms, 0.1), percentile(ms, 0.9), *std::min_element(ms.begin(), ms.end()),
                   batch * 1000.0 / median, arena_mib);
      }
    }
    return 0;
  };
}

}  // namespace kiln::cli
