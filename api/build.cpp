// kiln::build: SOURCE -> checkpoint folder -> family (or importer) -> ModelDefinition -> .bundle.
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/engine.h"
#include "bundle/bundle.h"
#include "bundle/format.h"
#include "checkpoints/checkpoint.h"
#include "checkpoints/source.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/utf8.h"
#include "graph/family_registry.h"
#include "kiln/kiln.h"
#include "quantize/calibrate.h"
#include "quantize/calibrate_detection.h"
#include "quantize/calibrate_text.h"
#include "quantize/recipe.h"
#include "tasks/classification/preprocess.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

// Class names from a file: a JSON list, a JSON object {"0": "tench", ...}, or one per line.
std::vector<std::string> read_labels(const std::string& path) {
  const std::string text = read_file(path, kMaxSmallFileBytes);
  const size_t bad = first_invalid_utf8(text);
  KILN_CHECK(bad == std::string::npos, "[build] labels file {}: byte {} is not UTF-8", path, bad);
  std::vector<std::string> labels;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded() && j.is_array()) {
    for (const auto& v : j) labels.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  } else if (!j.is_discarded() && j.is_object()) {
    labels.resize(j.size());
    for (auto& [k, v] : j.items()) {
      size_t idx = 0;
      try {
        idx = std::stoul(k);
      } catch (const std::exception&) {
        fail("[build] labels file {}: key '{}' is not a class index", path, k);
      }
      KILN_CHECK(idx < labels.size() && v.is_string(), "[build] labels file {}: bad entry '{}'", path, k);
      labels[idx] = v.get<std::string>();
    }
  } else {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) labels.push_back(line);
  }
  return labels;
}

// A recipe by name from the model's family, or from a .json file; empty: the family's default.
QuantRecipe load_recipe(const ModelDefinition& def, const std::string& name) {
  if (name.ends_with(".json")) return parse_recipe(read_json_file(name, "recipe"), name);
  const Family* family = FamilyRegistry::instance().find_family(def.architecture);
  KILN_CHECK(family, "[build] no family builds '{}'", def.architecture);
  const auto& recipes = family->info().recipes;
  KILN_CHECK(!recipes.empty(), "[build] family {} ships no FP8 recipe; give one with --recipe FILE.json",
             family->name());
  const std::string wanted = name.empty() ? family->info().default_recipe : name;
  std::vector<std::string> names;
  for (const auto& [n, text] : recipes) {
    names.push_back(n);
    if (n == wanted) {
      auto j = nlohmann::json::parse(text, nullptr, false);
      KILN_CHECK(!j.is_discarded(), "[build] recipe {} of {} is not valid JSON", n, family->name());
      return parse_recipe(j, n);
    }
  }
  fail("[build] family {} has no recipe '{}' (it has: {})", family->name(), name, fmt::join(names, ", "));
}

ModelDefinition define_model(const std::string& dir) {
  auto& registry = FamilyRegistry::instance();
  if (fs::exists(fs::path(dir) / "config.json")) {
    Checkpoint ckpt(dir);
    const std::string arch = config_architecture(ckpt.config());
    const Family* family = registry.find_family(arch);
    KILN_CHECK(family, "[build] {}: unknown architecture '{}' (kiln builds: {})", dir, arch,
               fmt::join(registry.architectures(), ", "));
    try {
      return family->build(ckpt);
    } catch (const nlohmann::json::exception& e) {  // a config value of the wrong type
      std::string what = e.what();
      if (what.starts_with("[json.exception.")) what.erase(0, what.find("] ") + 2);
      fail("[build] {}/config.json: {}", dir, what);
    }
  }
  const Importer* importer = registry.find_importer(dir);
  KILN_CHECK(importer, "[build] {}: not a Hugging Face checkpoint (no config.json) nor a model format kiln imports",
             dir);
  return importer->import(dir);
}

}  // namespace

Status build(const std::string& source, const std::string& output_path, const BuildOptions& options,
             BuildResult* result) {
  try {
    auto start = std::chrono::steady_clock::now();
    KILN_CHECK(options.precision == "fp32" || options.precision == "fp16" || options.precision == "fp8",
               "[build] precision '{}' is not available (fp32, fp16, fp8)", options.precision);
    KILN_CHECK(options.precision == "fp8" || (options.recipe.empty() && options.calib.empty()),
               "[build] --recipe and --calib apply to --precision fp8");
    KILN_CHECK(options.precision != "fp8" || !options.calib.empty(),
               "[build] --precision fp8 needs calibration data: --calib SRC (images, or a text file for text models)");
    KILN_CHECK(!options.batch_sizes.empty(), "[build] no batch sizes given");
    check_bundle_path(output_path);
    for (int b : options.batch_sizes)
      KILN_CHECK(b >= 1 && b <= bundle::kMaxBatchSize, "[build] batch size {} is out of range", b);
    ResolvedSource src = resolve_source(source, options.revision);
    ModelDefinition def = define_model(src.dir);
    if (!options.labels_file.empty()) {
      auto labels = read_labels(options.labels_file);
      const size_t classes = def.task_config["labels"].size();
      KILN_CHECK(labels.size() == classes, "[build] labels file {} has {} names for {} classes", options.labels_file,
                 labels.size(), classes);
      def.task_config["labels"] = labels;
    }
    BuildInfo info;
    info.model_id = src.model_id;
    info.revision = src.revision;
    info.precision = options.precision;
    info.batch_sizes = options.batch_sizes;
    info.options = {{"source", source}, {"revision", options.revision}, {"labels_file", options.labels_file}};
    int fp8_layers = 0;
    double calibration_seconds = 0;
    std::string recipe_name;
    if (options.precision == "fp8") {
      auto t0 = std::chrono::steady_clock::now();
      QuantRecipe recipe = load_recipe(def, options.recipe);
      recipe_name = recipe.name;
      auto layers = select_fp8_layers(def, recipe);
      KILN_CHECK(!layers.empty(), "[build] recipe {} selects no layer of {}", recipe.name, def.architecture);
      CalibrationOptions calib{options.calib, options.calib_samples, options.calib_method};
      // Each task calibrates on its own kind of data, run as the task runs it: sentences for
      // text models, a detection dataset's images for detectors, images for classifiers.
      Fp8Clips clips;
      if (def.task == "translation" || def.task == "summarization")
        clips = calibrate_text_activations(def, layers, recipe, calib);
      else if (def.task == "object_detection")
        clips = calibrate_detection_activations(def, layers, recipe, calib);
      else
        clips = calibrate_activations(
            def, layers, classification::PreprocessConfig::from_json(def.task_config.at("preprocess")), recipe, calib);
      apply_fp8(def, layers, clips);
      std::set<std::string> distinct;  // a layer held by several graphs counts once
      for (const auto& l : layers) distinct.insert(l.weight);
      fp8_layers = static_cast<int>(distinct.size());
      info.options["quantization"] = {
          {"recipe", recipe.source},
          {"calibration",
           {{"data", options.calib},
            {"samples", options.calib_samples},
            {"method", options.calib_method.empty() ? recipe.calib_method : options.calib_method}}},
          {"fp8_layers", fp8_layers}};
      calibration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    // Time the candidate kernels for every batch size now and keep the choices, on the device
    // the bundle's precision is for: the GPU (fp16, fp8) where there is one, the CPU (fp32:
    // oneDNN's implementations of the large convs) with the thread count set for this process.
    // Not both: timing a batch of 128 on the CPU would take most of a GPU bundle's build. A
    // graph without a batch dim is planned on the GPU at first load, on the CPU not at all;
    // so is every graph with options.plan off (--no-plan).
    std::string planned_on;
    const auto planning_start = std::chrono::steady_clock::now();
    const Graph& g = def.graph(def.task_config.value("graph", std::string("main")));
    auto plan_on = [&](EngineOptions engine_options) {
      Engine engine(g, def.constants(), engine_options);
      for (int b : options.batch_sizes) {
        Bindings sizes = g.example_bindings();
        KILN_CHECK(sizes.count("batch"), "[build] --batch: the graph has no 'batch' dim");
        sizes["batch"] = b;
        engine.prepare(sizes);
      }
      info.plans = engine.export_plans();
      const nlohmann::json& plans = info.plans.begin().value();  // the one backend's
      planned_on = fmt::format("{} ({})", info.plans.begin().key(), plans.value("device", std::string("?")));
    };
    if (options.plan && options.precision != "fp32" && cuda_available()) plan_on(EngineOptions{"cuda", "fp16"});
    if (options.plan && options.precision == "fp32" && g.example_bindings().count("batch")) {
      EngineOptions cpu{"cpu", "fp32"};
      cpu.time_cpu_variants = true;
      plan_on(cpu);
    }
    const double planning_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - planning_start).count();
    uint64_t bytes = write_bundle(output_path, def, info);
    if (result) {
      result->architecture = def.architecture;
      result->family = def.family;
      result->model_id = src.model_id;
      result->revision = src.revision;
      result->checkpoint_dir = src.dir;
      result->bundle_bytes = bytes;
      result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      result->planned_on = planned_on;
      result->planning_seconds = planning_seconds;
      result->recipe = recipe_name;
      result->fp8_layers = fp8_layers;
      result->calibration_seconds = calibration_seconds;
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

}  // namespace kiln
