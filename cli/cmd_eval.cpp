#include <fmt/format.h>

#include "cli/commands.h"
#include "tasks/classification/evaluate.h"

namespace kiln::cli {

Command add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Accuracy of a bundle on labelled images, and agreement with a reference");
  auto o = std::make_shared<classification::EvalOptions>();
  auto json = std::make_shared<bool>(false);
  auto bundle = std::make_shared<std::string>();
  cmd->add_option("bundle", *bundle, "Bundle file")->required();
  cmd->add_option("--data", o->data,
                  "WebDataset shards (file, folder, glob), a folder with labels.tsv, or an ImageFolder")
      ->required();
  cmd->add_option("--limit", o->limit, "Evaluate only the first N images");
  cmd->add_option("--reference", o->reference,
                  "cpu (this bundle on the CPU), another .bundle (run on the CPU), or logits saved by --save-logits");
  cmd->add_option("--save-logits", o->save_logits, "Write this run's logits and labels to a .safetensors file");
  cmd->add_option("--device", o->device, "cpu, cuda, or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--batch", o->batch, "Images per engine call")->check(CLI::Range(1, 4096));
  cmd->add_flag("--json", *json, "Print one JSON object as the last line of stdout");
  return [o, json, bundle] {
    auto r = classification::evaluate(*bundle, *o);
    if (*json) {
      fmt::print("{}\n", r.to_json().dump());
      return 0;
    }
    fmt::print("{} images ({}) on {} in {:.1f} s, {:.1f} images/s\n", r.images, r.data, r.device, r.seconds,
               r.images_per_s);
    if (r.labelled) fmt::print("top-1 {:.2f}%  top-5 {:.2f}%  ({} labelled)\n", r.top1, r.top5, r.labelled);
    if (r.has_reference)
      fmt::print("reference: top-1 agreement {:.2f}%, max |logit diff| {:.4g}, mean {:.3g}, reference top-1 {:.2f}%\n",
                 r.agreement, r.max_abs_logit_diff, r.mean_abs_logit_diff, r.reference_top1);
    fmt::print("non-finite outputs: {}\n", r.nonfinite);
    return 0;
  };
}

}  // namespace kiln::cli
