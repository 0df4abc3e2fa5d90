#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "core/error.h"
#include "graph/family_registry.h"
#include "validate/gates.h"

namespace kiln::cli {

namespace fs = std::filesystem;

// Checks checkpoint manifests against their families (TensorRT-Model-Connect's `model_ci
// validate`) and runs the gates this machine can run.
Command add_validate(CLI::App& app) {
  auto* cmd = app.add_subcommand("validate", "Check the families' checkpoint manifests and run their gates");
  struct Args {
    std::vector<std::string> files;
    std::string family, data, work;
    bool static_only = false, json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("manifests", args->files, "Manifest files (default: every manifest kiln's families ship)");
  cmd->add_option("--family", args->family, "Only this family's manifests");
  cmd->add_option("--data", args->data, "The test data folder gates read (default: $KILN_TEST_DATA)");
  cmd->add_option("--work", args->work, "Where to build the gates' bundles (default: a temporary folder)");
  cmd->add_flag("--static", args->static_only, "Check the manifests only; run no gate");
  cmd->add_flag("--json", args->json, "One JSON object per manifest");
  return [args] {
    std::string data = args->data;
    if (data.empty() && std::getenv("KILN_TEST_DATA")) data = std::getenv("KILN_TEST_DATA");
    KILN_CHECK(!data.empty(), "[validate] give the test data folder: --data DIR or KILN_TEST_DATA");
    std::vector<std::pair<std::string, std::string>> sources;  // file name, TOML text
    std::map<std::string, std::string> shipped_by;             // file name -> the family whose folder holds it
    if (!args->files.empty()) {
      for (const auto& f : args->files) {
        std::ifstream in(f);
        KILN_CHECK(in.good(), "[validate] cannot read {}", f);
        sources.emplace_back(f, std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
      }
    } else {
      for (const Family* family : FamilyRegistry::instance().families()) {
        if (!args->family.empty() && family->name() != args->family) continue;
        for (const auto& [name, text] : family->info().manifests) {
          const std::string file = fmt::format("families/{}/manifests/{}.toml", family->name(), name);
          sources.emplace_back(file, text);
          shipped_by[file] = family->name();
        }
      }
      KILN_CHECK(!sources.empty(), "[validate] no manifests{}", args->family.empty() ? "" : " for " + args->family);
    }
    std::string work = args->work;
    bool temporary = false;
    if (work.empty() && !args->static_only) {
      std::string tmpl = (fs::temp_directory_path() / "kiln-validate-XXXXXX").string();
      KILN_CHECK(mkdtemp(tmpl.data()), "[validate] cannot make a temporary folder");
      work = tmpl;
      temporary = true;
    }
    int invalid = 0, failed = 0, passed = 0, skipped = 0;
    for (const auto& [file, text] : sources) {
      std::vector<std::string> problems;
      Manifest m;
      try {
        m = parse_manifest(text, file);
        problems = check_manifest(m, data);
        if (shipped_by.count(file) && shipped_by[file] != m.family)
          problems.push_back(
              fmt::format("{}: in family {}'s folder but names family '{}'", file, shipped_by[file], m.family));
      } catch (const Error& e) {
        problems.push_back(e.what());
      }
      nlohmann::json j = {{"manifest", file}, {"problems", problems}, {"gates", nlohmann::json::array()}};
      if (!problems.empty()) {
        ++invalid;
        if (!args->json)
          for (const auto& p : problems) fmt::print("invalid  {}\n", p);
        if (args->json) fmt::print("{}\n", j.dump());
        continue;
      }
      if (!args->json) fmt::print("valid    {}: {} @ {}\n", file, m.id, m.revision);
      if (!args->static_only) {
        run_gates(m, data, work, [&](const GateResult& r) {
          failed += r.status == "failed";
          passed += r.status == "passed";
          skipped += r.status == "skipped";
          if (!args->json) fmt::print("  {:<8} gate {}: {}\n", r.status, r.gate, r.detail);
          j["gates"].push_back({{"gate", r.gate}, {"status", r.status}, {"detail", r.detail}, {"metrics", r.metrics}});
        });
      }
      if (args->json) fmt::print("{}\n", j.dump());
    }
    if (temporary) fs::remove_all(work);
    if (!args->json)
      fmt::print("{} manifest(s): {} invalid; gates: {} passed, {} failed, {} skipped\n", sources.size(), invalid,
                 passed, failed, skipped);
    KILN_CHECK(invalid == 0 && failed == 0, "[validate] {} invalid manifest(s), {} failed gate(s)", invalid, failed);
    return 0;
  };
}

}  // namespace kiln::cli
