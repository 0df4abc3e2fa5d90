#include <fmt/format.h>

#include "cli/commands.h"
#include "kiln/kiln.h"

namespace kiln::cli {

Command add_build(CLI::App& app) {
  auto* cmd = app.add_subcommand("build", "Build a checkpoint (folder, Hub id or cached Hub id) into a .bundle");
  struct Args {
    std::string source, output, revision, precision = "fp32", batch = "1", labels, recipe, calib, calib_method;
    size_t calib_samples = 500;
    bool no_plan = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("source", args->source, "Checkpoint folder, Hub id (org/name), or a TF.js graph model folder")
      ->required();
  cmd->add_option("-o,--output", args->output, "Bundle file to write")->required();
  cmd->add_option("--revision", args->revision, "Hub revision: branch, tag or commit (default main)");
  cmd->add_option("--precision", args->precision, "Weights and compute precision")
      ->check(CLI::IsMember({"fp32", "fp16", "fp8"}));
  cmd->add_option("--batch", args->batch, "Batch sizes to plan for, e.g. 1,32,128");
  cmd->add_option("--labels", args->labels, "Class names: JSON list, JSON object {index: name}, or one per line");
  cmd->add_option("--recipe", args->recipe, "fp8: a recipe the family ships (default: its first) or a .json file");
  cmd->add_option("--calib", args->calib,
                  "fp8: calibration data: images (shards, labels.tsv folder or ImageFolder), for detectors a YOLO "
                  "folder (its images/), for text models a file of one sentence a line");
  cmd->add_option("--calib-samples", args->calib_samples, "fp8: how many calibration images or sentences")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--calib-method", args->calib_method, "fp8: override the recipe's calibration")
      ->check(CLI::IsMember({"max", "percentile", "mse"}));
  cmd->add_flag("--no-plan", args->no_plan,
                "Do not time kernels now: a GPU times them at first load, the CPU takes oneDNN's picks (for a "
                "bundle built on another CPU than the one it runs on)");
  return [args] {
    BuildOptions o;
    o.revision = args->revision;
    o.precision = args->precision;
    o.batch_sizes = parse_batch_list(args->batch, "build");
    o.labels_file = args->labels;
    o.recipe = args->recipe;
    o.calib = args->calib;
    o.calib_samples = args->calib_samples;
    o.calib_method = args->calib_method;
    o.plan = !args->no_plan;
    BuildResult r;
    Status s = build(args->source, args->output, o, &r);
    if (!s.ok()) throw std::runtime_error(s.message());
    fmt::print("built {} ({} / {}) from {} in {:.2f} s: {} ({:.1f} MiB, {})\n", r.architecture, r.family,
               r.revision.empty() ? "local" : r.revision.substr(0, 12), r.checkpoint_dir, r.seconds, args->output,
               r.bundle_bytes / 1048576.0, o.precision);
    if (r.fp8_layers)
      fmt::print("recipe {}: {} layers in FP8 E4M3, calibrated in {:.1f} s\n", r.recipe, r.fp8_layers,
                 r.calibration_seconds);
    if (!r.planned_on.empty())
      fmt::print("planned batch sizes {} on {} in {:.2f} s\n", args->batch, r.planned_on, r.planning_seconds);
    else if (args->no_plan)
      fmt::print("not planned (--no-plan): kernels are chosen when an engine loads the bundle\n");
    else if (o.precision != "fp32")
      fmt::print("no GPU here: kernel choices will be planned on the GPU at first load\n");
    return 0;
  };
}

}  // namespace kiln::cli
