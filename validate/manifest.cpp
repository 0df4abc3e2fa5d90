#include "validate/manifest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "graph/family_registry.h"

namespace kiln {

namespace {

void only_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [k, v] : t)
    KILN_CHECK(allowed.count(std::string(k.str())), "[manifest] {}: unknown key '{}'", where, k.str());
}

std::string str(const toml::table& t, const char* key, const std::string& where, bool required = true) {
  const auto v = t[key].value<std::string>();
  KILN_CHECK(v.has_value() || !required, "[manifest] {}: '{}' must be a string", where, key);
  KILN_CHECK(!t.contains(key) || v.has_value(), "[manifest] {}: '{}' must be a string", where, key);
  return v.value_or("");
}

std::optional<double> number(const toml::table& t, const char* key, const std::string& where) {
  if (!t.contains(key)) return std::nullopt;
  const auto v = t[key].value<double>();
  KILN_CHECK(v.has_value(), "[manifest] {}: '{}' must be a number", where, key);
  return v;
}

const toml::array& table_array(const toml::table& t, const char* key, const std::string& where) {
  const toml::array* a = t[key].as_array();
  KILN_CHECK(a && !a->empty() && a->is_array_of_tables(), "[manifest] {}: needs at least one [[{}]]", where, key);
  return *a;
}

}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& file) {
  toml::table t;
  try {
    t = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    fail("[manifest] {}: {}", file, e.description());
  }
  only_keys(t, {"family", "id", "revision", "architecture", "builds", "gates"}, file);
  Manifest m;
  m.file = file;
  m.family = str(t, "family", file);
  m.id = str(t, "id", file);
  m.revision = str(t, "revision", file);
  m.architecture = str(t, "architecture", file);
  for (const auto& node : table_array(t, "builds", file)) {
    const toml::table& b = *node.as_table();
    const std::string where = fmt::format("{}: [[builds]] {}", file, m.builds.size() + 1);
    only_keys(b, {"precision", "batch_sizes", "recipe", "calibration", "calibration_samples"}, where);
    ManifestBuild build;
    build.precision = str(b, "precision", where);
    const toml::array* sizes = b["batch_sizes"].as_array();
    KILN_CHECK(sizes && !sizes->empty(), "[manifest] {}: 'batch_sizes' must be a list of sizes", where);
    for (const auto& s : *sizes) {
      const auto v = s.value<int64_t>();
      KILN_CHECK(v && *v >= 1 && *v <= 4096, "[manifest] {}: batch sizes are whole numbers 1 to 4096", where);
      build.batch_sizes.push_back(static_cast<int>(*v));
    }
    build.recipe = str(b, "recipe", where, false);
    build.calibration = str(b, "calibration", where, false);
    build.calibration_samples = static_cast<int>(b["calibration_samples"].value_or(int64_t{500}));
    m.builds.push_back(build);
  }
  for (const auto& node : table_array(t, "gates", file)) {
    const toml::table& g = *node.as_table();
    const std::string where = fmt::format("{}: [[gates]] {}", file, m.gates.size() + 1);
    only_keys(g,
              {"name", "build", "device", "kind", "checkpoint", "reference", "inputs", "outputs", "max_abs_diff",
               "min_top1_agreement", "data", "against", "limit", "min_top1", "min_agreement", "generation",
               "max_new_tokens", "min_identical"},
              where);
    ManifestGate gate;
    gate.name = str(g, "name", where);
    gate.build = str(g, "build", where);
    gate.device = str(g, "device", where);
    gate.kind = str(g, "kind", where);
    gate.checkpoint = str(g, "checkpoint", where);
    gate.reference = str(g, "reference", where, false);
    gate.inputs = str(g, "inputs", where, false);
    gate.outputs = str(g, "outputs", where, false);
    gate.max_abs_diff = number(g, "max_abs_diff", where);
    gate.min_top1_agreement = number(g, "min_top1_agreement", where);
    gate.data = str(g, "data", where, false);
    gate.against = str(g, "against", where, false);
    gate.limit = static_cast<int>(g["limit"].value_or(int64_t{0}));
    gate.min_top1 = number(g, "min_top1", where);
    gate.min_agreement = number(g, "min_agreement", where);
    gate.generation = str(g, "generation", where, false);
    gate.max_new_tokens = static_cast<int>(g["max_new_tokens"].value_or(int64_t{64}));
    gate.min_identical = number(g, "min_identical", where);
    m.gates.push_back(gate);
  }
  return m;
}

std::vector<std::string> check_manifest(const Manifest& m, const std::string& data_dir) {
  std::vector<std::string> problems;
  auto problem = [&](std::string what) { problems.push_back(fmt::format("{}: {}", m.file, what)); };
  const Family* family = FamilyRegistry::instance().find_by_name(m.family);
  if (!family) {
    problem(fmt::format("unknown family '{}'", m.family));
    return problems;
  }
  const auto& archs = family->info().architectures;
  if (std::find(archs.begin(), archs.end(), m.architecture) == archs.end())
    problem(fmt::format("unknown architecture '{}' (family {} builds: {})", m.architecture, m.family,
                        fmt::join(archs, ", ")));
  const size_t slash = m.id.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == m.id.size())
    problem(fmt::format("id '{}' is not a Hub id (org/name)", m.id));
  const bool pinned = m.revision.size() == 40 && std::all_of(m.revision.begin(), m.revision.end(), [](char c) {
                        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                      });
  if (!pinned) problem(fmt::format("revision '{}' is not pinned: it must be a commit (40 hex digits)", m.revision));
  auto exists = [&](const std::string& rel) { return std::filesystem::exists(std::filesystem::path(data_dir) / rel); };
  std::set<std::string> precisions;
  for (const auto& b : m.builds) {
    if (b.precision != "fp32" && b.precision != "fp16" && b.precision != "fp8")
      problem(fmt::format("build precision '{}' is not fp32, fp16 or fp8", b.precision));
    if (!precisions.insert(b.precision).second) problem(fmt::format("two builds of precision {}", b.precision));
    if (b.precision != "fp8" && (!b.recipe.empty() || !b.calibration.empty()))
      problem(fmt::format("the {} build names a recipe or calibration data (fp8 only)", b.precision));
    if (b.precision != "fp8") continue;
    const std::string recipe = b.recipe.empty() ? family->info().default_recipe : b.recipe;
    const auto& recipes = family->info().recipes;
    if (std::none_of(recipes.begin(), recipes.end(), [&](const auto& r) { return r.first == recipe; }))
      problem(fmt::format("the fp8 build's recipe '{}' is not one family {} ships", recipe, m.family));
    if (b.calibration.empty())
      problem("the fp8 build names no calibration data");
    else if (!exists(b.calibration))
      problem(fmt::format("calibration data {} is not in {}", b.calibration, data_dir));
  }
  for (const auto& p : precisions)
    if (std::none_of(m.gates.begin(), m.gates.end(), [&](const ManifestGate& g) { return g.build == p; }))
      problem(fmt::format("the {} build has no gate", p));
  std::set<std::string> names;
  for (const auto& g : m.gates) {
    const std::string gate = fmt::format("gate '{}'", g.name);
    if (!names.insert(g.name).second) problem(fmt::format("two gates are named '{}'", g.name));
    if (!precisions.count(g.build))
      problem(fmt::format("{} checks build '{}', which the manifest does not list", gate, g.build));
    if (g.device != "cpu" && g.device != "cuda") problem(fmt::format("{}: device must be cpu or cuda", gate));
    if (!exists(g.checkpoint)) problem(fmt::format("{}: checkpoint {} is not in {}", gate, g.checkpoint, data_dir));
    if (g.kind == "parity") {
      if (g.reference.empty() || g.inputs.empty() || g.outputs.empty())
        problem(fmt::format("{}: a parity gate needs reference, inputs and outputs", gate));
      else if (!exists(g.reference))
        problem(fmt::format("{}: reference {} is not in {}", gate, g.reference, data_dir));
      if (!g.max_abs_diff && !g.min_top1_agreement)
        problem(fmt::format("{}: no threshold (max_abs_diff, min_top1_agreement)", gate));
    } else if (g.kind == "eval") {
      if (g.data.empty())
        problem(fmt::format("{}: an eval gate needs data", gate));
      else if (!exists(g.data))
        problem(fmt::format("{}: data {} is not in {}", gate, g.data, data_dir));
      if (!g.against.empty() && g.against != "fp32" && g.against != "cpu")
        problem(fmt::format("{}: against must be fp32 or cpu", gate));
      if (!g.min_top1 && !g.min_agreement) problem(fmt::format("{}: no threshold (min_top1, min_agreement)", gate));
      if (g.min_agreement && g.against.empty()) problem(fmt::format("{}: min_agreement needs against", gate));
    } else if (g.kind == "generation") {
      if (g.reference.empty())
        problem(fmt::format("{}: a generation gate needs a reference", gate));
      else if (!exists(g.reference))
        problem(fmt::format("{}: reference {} is not in {}", gate, g.reference, data_dir));
      if (g.generation != "greedy" && g.generation != "default")
        problem(fmt::format("{}: generation must be greedy or default", gate));
      if (g.max_new_tokens < 1 || g.max_new_tokens > 4096)
        problem(fmt::format("{}: max_new_tokens must be from 1 to 4096", gate));
      if (!g.min_identical) problem(fmt::format("{}: no threshold (min_identical)", gate));
    } else {
      problem(fmt::format("{}: kind '{}' is not parity, eval or generation", gate, g.kind));
    }
  }
  return problems;
}

}  // namespace kiln
