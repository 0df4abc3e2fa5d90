// One harness for every op (tests/ops/cases/): each case runs on the CPU reference kernels and
// on every other backend and precision kiln has here (the CPU's fast kernels, CUDA), and must
// match the reference within the case's tolerance; integer outputs must match exactly. Independently of GPUs it checks
// that each case's graph survives a JSON round trip bit for bit and that fused ops match their decomposition. --perf
// times every case on every backend instead.
//
//   kiln_op_harness [--op NAME] [--backend cpu|cuda] [--perf] [--list]   (cpu: the fast kernels)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "core/dtype.h"
#include "core/error.h"
#include "tests/ops/op_case.h"

namespace kiln::test {
namespace {

struct Config {
  std::string label, device, precision;
};

ConstantLookup lookup(const OpCase& c) {
  return [&c](const std::string& name) {
    const HostTensor& t = c.constants.at(name);
    return ConstantView{t.dtype, t.shape, t.data};
  };
}

// Whether the case computes in a 16-bit float type anywhere (then f16 tolerances apply).
bool low_precision(const Graph& g) {
  return std::any_of(g.values().begin(), g.values().end(), [](const Value& v) {
    return v.dtype == DType::F16 || v.dtype == DType::BF16 || v.dtype == DType::F8E4M3;
  });
}

// "" when `got` matches `want` within `tolerance`, else what differs.
std::string compare(const std::vector<HostTensor>& want, const std::vector<HostTensor>& got, double tolerance) {
  if (want.size() != got.size()) return fmt::format("{} outputs, expected {}", got.size(), want.size());
  std::string worst;
  for (size_t i = 0; i < want.size(); ++i) {
    const HostTensor &a = want[i], &b = got[i];
    if (a.shape != b.shape || a.dtype != b.dtype)
      return fmt::format("{}: {} {}, expected {} {}", a.name, dtype_name(b.dtype), to_string(b.shape),
                         dtype_name(a.dtype), to_string(a.shape));
    const auto fa = a.to_f32(), fb = b.to_f32();
    if (!is_float(a.dtype)) {
      for (size_t e = 0; e < fa.size(); ++e)
        if (fa[e] != fb[e]) return fmt::format("{}[{}] = {}, expected {}", a.name, e, fb[e], fa[e]);
      continue;
    }
    double scale = 1, err = 0;
    size_t at = 0;
    for (float v : fa)
      if (std::isfinite(v)) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    for (size_t e = 0; e < fa.size(); ++e) {
      // Equal infinities (a banned token's -inf) and NaN against NaN agree.
      const bool same = fa[e] == fb[e] || (std::isnan(fa[e]) && std::isnan(fb[e]));
      const double d = same ? 0 : std::fabs(static_cast<double>(fa[e]) - fb[e]);
      if (!(d <= err)) {  // NaN counts as worst
        err = std::isnan(d) ? INFINITY : d;
        at = e;
      }
    }
    if (err / scale > tolerance)
      return fmt::format("{}: error {:.3g} > {:.3g} (at {}: {} vs {})", a.name, err / scale, tolerance, at, fb[at],
                         fa[at]);
  }
  return worst;
}

int run(int argc, char** argv) {
  std::string only_op, only_backend;
  bool perf = false, list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--op" && i + 1 < argc)
      only_op = argv[++i];
    else if (a == "--backend" && i + 1 < argc)
      only_backend = argv[++i];
    else if (a == "--perf")
      perf = true;
    else if (a == "--list")
      list = true;
    else {
      std::fprintf(stderr, "usage: kiln_op_harness [--op NAME] [--backend cpu|cuda] [--perf] [--list]\n");
      return 2;
    }
  }
  std::vector<Config> configs;
  if (only_backend.empty() || only_backend == "cpu") configs.push_back({"cpu", "cpu", "fp32"});
  if (only_backend.empty() || only_backend == "cuda") {
    if (cuda_available()) {
      configs.push_back({"cuda fp32", "cuda", "fp32"});
      configs.push_back({"cuda fp16", "cuda", "fp16"});
    } else if (only_backend == "cuda") {
      std::printf("skipped: no usable CUDA GPU here\n");
      return 0;
    }
  }
  int cases = 0, failures = 0;
  std::map<std::string, int> ops;
  for (OpCase& c : all_op_cases()) {
    if (!only_op.empty() && c.op != only_op) continue;
    ++cases;
    ++ops[c.op];
    if (list) {
      std::printf("%s\n", c.name.c_str());
      continue;
    }
    auto fail_case = [&](const std::string& what, const std::string& why) {
      std::printf("FAIL %s [%s]: %s\n", c.name.c_str(), what.c_str(), why.c_str());
      ++failures;
    };
    try {
      Engine reference(c.graph, lookup(c), EngineOptions{"cpu-reference"});
      const auto want = reference.run(c.inputs);
      const bool low = low_precision(c.graph);
      // The graph as a bundle stores it must compute the same, bit for bit.
      const Graph back = Graph::from_json(c.graph.to_json(), [&](const std::string& n) -> std::optional<ConstantInfo> {
        auto v = c.graph.values();
        for (const auto& val : v)
          if (val.kind == ValueKind::Constant && val.name == n) return ConstantInfo{val.dtype, resolve(val.shape, {})};
        return std::nullopt;
      });
      const std::string round_trip =
          compare(want, Engine(back, lookup(c), EngineOptions{"cpu-reference"}).run(c.inputs), 0);
      if (!round_trip.empty()) fail_case("json round trip", round_trip);
      for (const Config& cfg : configs) {
        if (cfg.precision == "fp16" && !c.fp16_precision) continue;
        const bool half = low || cfg.precision == "fp16";
        const double tol = half ? c.tolerance_f16 : c.tolerance_f32;
        {
          Engine e(c.graph, lookup(c), EngineOptions{cfg.device, cfg.precision});
          if (e.cpu_fallback_nodes() > 0)
            fail_case(cfg.label, fmt::format("{} node(s) fell back to the CPU", e.cpu_fallback_nodes()));
          const std::string diff = compare(want, e.run(c.inputs), tol);
          if (!diff.empty()) fail_case(cfg.label, diff);
        }
        if (c.decomposition) {
          Engine d(c.decomposition(), lookup(c), EngineOptions{cfg.device, cfg.precision});
          const std::string diff = compare(want, d.run(c.inputs), std::max(tol, half ? 0.0 : 1e-5));
          if (!diff.empty()) fail_case(cfg.label + " decomposition", diff);
        }
        if (perf) {
          Engine e(c.graph, lookup(c), EngineOptions{cfg.device, cfg.precision});
          auto ms = e.benchmark(e.bind(c.inputs), 5, 11, cfg.device == "cpu" ? 1 : 20);
          std::sort(ms.begin(), ms.end());
          std::printf("perf %-48s %-10s %10.4f ms\n", c.name.c_str(), cfg.label.c_str(), ms[ms.size() / 2]);
        }
      }
    } catch (const std::exception& e) {
      fail_case("error", e.what());
    }
  }
  if (list) return 0;
  std::string configs_text;
  for (const auto& cfg : configs) configs_text += (configs_text.empty() ? "" : ", ") + cfg.label;
  std::printf("%d cases of %zu ops on %s: %d failed\n", cases, ops.size(), configs_text.c_str(), failures);
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace kiln::test

int main(int argc, char** argv) {
  try {
    return kiln::test::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_op_harness: %s\n", e.what());
    return 1;
  }
}
