#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

#include "bundle/bundle.h"
#include "cli/commands.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln::cli {

namespace {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  double pos = p * (v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

// "seq=128,src=64" -> {{"seq", 128}, {"src", 64}}, each at least `least`
Bindings parse_assignments(const std::string& text, const char* option, long long least) {
  Bindings out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    KILN_CHECK(eq != std::string::npos && eq > 0, "[bench] {}: '{}' is not NAME=NUMBER", option, item);
    try {
      size_t used = 0;
      const long long v = std::stoll(item.substr(eq + 1), &used);
      KILN_CHECK(used == item.size() - eq - 1 && v >= least, "[bench] {}: bad number in '{}'", option, item);
      out[item.substr(0, eq)] = v;
    } catch (const std::logic_error&) {
      fail("[bench] {}: bad number in '{}'", option, item);
    }
    start = end + 1;
  }
  return out;
}

// Sets element i of the integer tensor t to value(i); `option` and `name` for the errors.
template <typename F>
void set_integers(HostTensor& t, const std::string& option, const std::string& name, int64_t largest, F value) {
  if (t.dtype == DType::I64) {
    for (int64_t i = 0; i < t.numel(); ++i) t.as<int64_t>()[i] = value(i);
  } else if (t.dtype == DType::I32 && largest <= std::numeric_limits<int32_t>::max()) {
    for (int64_t i = 0; i < t.numel(); ++i) t.as<int32_t>()[i] = static_cast<int32_t>(value(i));
  } else if (t.dtype == DType::I32) {
    fail("[bench] {}: {} does not fit input '{}' (int32)", option, largest, name);
  } else {
    fail("[bench] {}: input '{}' is {}, not an integer", option, name, dtype_name(t.dtype));
  }
}

// The graph's inputs at these sizes, made up as Engine::benchmark's are, except integer inputs
// named in `values`, every element of which is set to the value given (made-up integers are 0:
// a decoder step's lengths and positions then leave its attention with nothing to do), and those
// named in `spread`: NAME=N gives row r of the input's R rows (its first dim) the value r * N / R
// in every element, N values in all, consecutive rows sharing one. A decoder step's row tables
// are then as a batch of sources makes them (128 rows, cross_rows=32: each source's four beams
// read their source's slot; cache_rows=128: each row its own history), not every row reading
// row 0, which leaves the caches' traffic in the GPU's L2.
std::vector<HostTensor> made_up_inputs(const Graph& g, const Bindings& sizes, const Bindings& values,
                                       const Bindings& spread) {
  std::vector<HostTensor> out;
  for (int v : g.inputs()) {
    const Value& val = g.values()[v];
    out.push_back(made_up_input(val, resolve(val.shape, sizes)));
    HostTensor& t = out.back();
    if (const auto it = values.find(val.name); it != values.end())
      set_integers(t, "--values", val.name, it->second, [&](int64_t) { return it->second; });
    if (const auto it = spread.find(val.name); it != spread.end()) {
      KILN_CHECK(!t.shape.empty() && t.shape[0] > 0, "[bench] --spread: input '{}' has no rows", val.name);
      const int64_t rows = t.shape[0], inner = t.numel() / rows, n = it->second;
      // r * n / rows in 128 bits (both may be near 2^63); at most n - 1.
      set_integers(t, "--spread", val.name, n - 1,
                   [&](int64_t i) { return static_cast<int64_t>(static_cast<__int128>(i / inner) * n / rows); });
    }
  }
  return out;
}

// ms per call of whole Engine::run calls, as an application makes them: inputs uploaded from
// host memory, the graph run, outputs read back, errors checked.
std::vector<double> time_whole_calls(Engine& engine, const std::vector<HostTensor>& inputs, int warmup, int samples,
                                     int calls) {
  for (int i = 0; i < warmup; ++i) engine.run(inputs);
  std::vector<double> ms;
  for (int s = 0; s < samples; ++s) {
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) engine.run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / calls);
  }
  return ms;
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Time a bundle's graph on made-up inputs (on the GPU: captured replays, inputs on the GPU)");
  struct Args {
    std::string bundle, graph, batch = "1", sizes, values, spread, device = "auto";
    int iters = 50, warmup = 10, calls = 0;
    bool json = false, profile = false, plan = false, whole_calls = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "Bundle file")->required();
  cmd->add_option("--graph", args->graph, "Which graph (default: the one the bundle's task runs)");
  cmd->add_option("--batch", args->batch, "Batch sizes, e.g. 1,32,128 (the graph's 'batch' dim)");
  cmd->add_option("--sizes", args->sizes, "Sizes of other symbolic dims, e.g. seq=128 (default: the graph's examples)");
  cmd->add_option("--values", args->values,
                  "Integer inputs set to a value, e.g. length=64,position=63 (default: 0, which a decoder step's "
                  "attention skips)");
  cmd->add_option("--spread", args->spread,
                  "Integer inputs whose rows take N values, consecutive rows sharing one, e.g. cross_rows=32 at 128 "
                  "rows: the four beams of each of 32 sources (default: every row 0)");
  cmd->add_option("--iters", args->iters, "Timed samples per batch size")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", args->warmup, "Untimed calls first")->check(CLI::Range(0, 100000));
  cmd->add_option("--calls", args->calls, "Calls per timed sample (default: 20 on the GPU, 1 on the CPU)")
      ->check(CLI::Range(1, 100000));
  add_device_option(cmd, args->device);
  cmd->add_flag("--json", args->json, "One JSON object per batch size");
  cmd->add_flag("--profile", args->profile,
                "Also report kernel time and least bytes moved per layer group, and the slowest kernels");
  cmd->add_flag("--plan", args->plan, "Also list the kernels, where each runs and the variant chosen");
  cmd->add_flag("--whole-calls", args->whole_calls,
                "Time whole run() calls instead: inputs from host memory, outputs read back (what an application "
                "waits for)");
  return [args] {
    const std::vector<int> batches = parse_batch_list(args->batch, "bench");
    auto bundle = Bundle::open(args->bundle);
    const std::string graph_name = args->graph.empty() ? bundle->main_graph() : args->graph;
    const Graph& g = bundle->graph(graph_name);
    Bindings base = g.example_bindings();
    for (const auto& [k, v] : parse_assignments(args->sizes, "--sizes", 1)) {
      KILN_CHECK(base.count(k), "[bench] --sizes: graph {} has no dim '{}'", graph_name, k);
      // --batch sets it for each timed size; taken here too, one of the two would be dropped.
      KILN_CHECK(k != "batch", "[bench] --sizes: give the batch with --batch (e.g. --batch {})", v);
      base[k] = v;
    }
    KILN_CHECK(base.count("batch") || batches == std::vector<int>{1}, "[bench] --batch: graph {} has no 'batch' dim",
               graph_name);
    const Bindings values = parse_assignments(args->values, "--values", 0);
    const Bindings spread = parse_assignments(args->spread, "--spread", 1);
    const std::vector<int> graph_inputs = g.inputs();
    for (const auto& [option, given] : {std::pair{"--values", &values}, std::pair{"--spread", &spread}})
      for (const auto& entry : *given) {
        const std::string& name = entry.first;  // a plain reference: lambdas may not capture structured bindings
        KILN_CHECK(
            std::any_of(graph_inputs.begin(), graph_inputs.end(), [&](int v) { return g.values()[v].name == name; }),
            "[bench] {}: graph {} has no input '{}'", option, graph_name, name);
        KILN_CHECK(option == std::string("--values") || !values.count(name),
                   "[bench] --spread: input '{}' is also given in --values", name);
      }
    Engine engine(g, bundle->constants(), bundle->engine_options(args->device));
    const bool gpu = engine.device().rfind("cpu", 0) != 0;  // "cpu", "cpu-reference"
    const int calls = args->calls > 0 ? args->calls : (gpu ? 20 : 1);
    if (!args->json)
      fmt::print("{} {} graph {} on {}, {} samples of {} {}calls\n{:>6} {:>10} {:>9} {:>9} {:>9} {:>11} {:>11}\n",
                 bundle->manifest()["model"].value("architecture", ""), bundle->precision(), graph_name,
                 engine.device(), args->iters, calls, args->whole_calls ? "whole " : "", "batch", "median ms", "p10 ms",
                 "p90 ms", "min ms", "items/s", "act. MiB");
    for (int batch : batches) {
      Bindings sizes = base;
      if (sizes.count("batch")) sizes["batch"] = batch;
      engine.prepare(sizes);
      const std::vector<HostTensor> inputs = made_up_inputs(g, sizes, values, spread);
      auto ms = args->whole_calls ? time_whole_calls(engine, inputs, args->warmup, args->iters, calls)
                                  : engine.benchmark(sizes, args->warmup, args->iters, calls, inputs);
      const double median = percentile(ms, 0.5);
      // Per node, then per group; the plan's lines name the nodes in the same order.
      // Bytes: what each node must move at least (Engine::node_bytes); over its time, the
      // bandwidth it reaches.
      std::vector<double> node_ms, node_bytes;
      std::map<std::string, double> groups, group_bytes;
      std::vector<std::string> plan;
      if (args->profile) {
        node_ms = engine.profile_nodes(sizes, 20, inputs);
        groups = engine.group_sums(node_ms);
        node_bytes = engine.node_bytes(sizes);
        group_bytes = engine.group_sums(node_bytes);
      }
      if (args->profile || args->plan) plan = engine.plan_summary(sizes);
      if (args->json) {
        nlohmann::json j = {{"device", engine.device()},
                            {"precision", bundle->precision()},
                            {"graph", graph_name},
                            {"sizes", sizes},
                            {"values", values},
                            {"spread", spread},
                            {"batch", batch},
                            {"whole_calls", args->whole_calls},
                            {"median_ms", median},
                            {"p10_ms", percentile(ms, 0.1)},
                            {"p90_ms", percentile(ms, 0.9)},
                            {"min_ms", *std::min_element(ms.begin(), ms.end())},
                            {"items_per_s", batch * 1000.0 / median},
                            {"activation_bytes", engine.activation_bytes()},
                            {"bundle_bytes", bundle->file_size()}};
        if (args->profile) {
          j["profile_ms"] = groups;
          j["profile_bytes"] = group_bytes;
          nlohmann::json nodes = nlohmann::json::array();
          for (size_t i = 0; i < node_ms.size(); ++i)
            nodes.push_back({{"node", plan[i]}, {"ms", node_ms[i]}, {"bytes", node_bytes[i]}});
          j["profile_nodes"] = nodes;
        }
        if (args->plan) j["plan"] = plan;
        fmt::print("{}\n", j.dump());
        continue;
      }
      fmt::print("{:>6} {:>10.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>11.1f} {:>11.1f}\n", batch, median, percentile(ms, 0.1),
                 percentile(ms, 0.9), *std::min_element(ms.begin(), ms.end()), batch * 1000.0 / median,
                 engine.activation_bytes() / 1048576.0);
      if (args->profile) {
        double total = 0;
        for (const auto& [grp, t] : groups) total += t;
        // GB/s: the group's least bytes over its time (1 GB/s = 1e6 bytes per ms).
        auto rate = [](double bytes, double ms) { return ms > 0 ? bytes / ms / 1e6 : 0.0; };
        double total_bytes = 0;
        for (const auto& [grp, t] : groups) {
          total_bytes += group_bytes[grp];
          fmt::print("         {:<20} {:8.3f} ms {:5.1f}% {:10.1f} MB {:8.1f} GB/s\n", grp, t, 100 * t / total,
                     group_bytes[grp] / 1e6, rate(group_bytes[grp], t));
        }
        fmt::print("         {:<20} {:8.3f} ms        {:10.1f} MB {:8.1f} GB/s (kernels launched one by one)\n",
                   "total", total, total_bytes / 1e6, rate(total_bytes, total));
        std::vector<size_t> order(node_ms.size());
        std::iota(order.begin(), order.end(), size_t{0});
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return node_ms[a] > node_ms[b]; });
        fmt::print("         slowest kernels:\n");
        for (size_t r = 0; r < std::min<size_t>(order.size(), 15); ++r)
          fmt::print("         {:8.3f} ms {:5.1f}%  {}\n", node_ms[order[r]], 100 * node_ms[order[r]] / total,
                     plan[order[r]]);
      }
      if (args->plan)
        for (const auto& line : plan) fmt::print("         {}\n", line);
    }
    fmt::print(stderr, "bundle {:.1f} MiB\n", bundle->file_size() / 1048576.0);
    return 0;
  };
}

}  // namespace kiln::cli
