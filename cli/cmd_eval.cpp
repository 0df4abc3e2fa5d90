#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <chrono>

#include "bundle/bundle.h"
#include "cli/commands.h"
#include "tasks/classification/evaluate.h"
#include "tasks/detection/evaluate.h"
#include "tasks/text/text_metrics.h"

namespace kiln::cli {

namespace {

struct TextEvalArgs {
  std::string source, target;
  size_t limit = 0;
  std::optional<int> beams;
  std::optional<int64_t> max_new_tokens, min_new_tokens;
  size_t warmup = 0;
  bool profile = false;
};

// The timed generation's time per graph (with what went into making its engine and its plans),
// and the rest (tokenizing, the search between the decoder's steps): on stderr when stdout is
// JSON.
void print_run_times(const Model& model, double seconds, bool json) {
  std::FILE* to = json ? stderr : stdout;
  double in_graphs = 0;
  fmt::print(to, "{:<14} {:>8} {:>10} {:>12} {:>9} {:>6} {:>12} {:>10} {:>6} {:>6}\n", "graph", "calls", "total ms",
             "ms per call", "setup ms", "plans", "planning ms", "tuning ms", "timed", "cached");
  for (const auto& g : model.run_times()) {
    if (g.calls == 0) continue;  // an engine made, not run (at load, or its only run failed)
    fmt::print(to, "{:<14} {:>8} {:>10.1f} {:>12.4f} {:>9.1f} {:>6} {:>12.1f} {:>10.1f} {:>6} {:>6}\n", g.graph,
               g.calls, 1e3 * g.seconds, 1e3 * g.seconds / g.calls, 1e3 * g.setup_seconds, g.plans,
               1e3 * g.planning_seconds, 1e3 * g.tuning_seconds, g.timed, g.cached);
    in_graphs += g.seconds;
  }
  fmt::print(to, "{:<14} {:>8} {:>10.1f}\n", "outside graphs", "", 1e3 * (seconds - in_graphs));
}

// A translation or summarization bundle's outputs for the source lines, scored against the
// target lines with sacreBLEU's default BLEU and chrF.
int eval_text(const std::string& bundle, const TextEvalArgs& a, const std::string& device, int batch, bool json) {
  std::vector<std::string> sources = read_lines(a.source), targets = read_lines(a.target);
  if (sources.size() != targets.size())
    throw std::runtime_error(
        fmt::format("[eval] {} has {} lines but {} has {}", a.source, sources.size(), a.target, targets.size()));
  if (a.limit && a.limit < sources.size()) {
    sources.resize(a.limit);
    targets.resize(a.limit);
  }
  std::unique_ptr<TextGenerator> t;
  Status s = TextGenerator::load(bundle, &t, device);
  if (!s.ok()) throw std::runtime_error(s.message());
  GenerationOptions o;
  o.num_beams = a.beams;
  o.max_new_tokens = a.max_new_tokens;
  o.min_new_tokens = a.min_new_tokens;
  o.batch = batch;
  // Untimed: the first lines once, so that the timing leaves out planning each shape.
  if (a.warmup) {
    const std::vector<std::string> first(sources.begin(), sources.begin() + std::min(a.warmup, sources.size()));
    std::vector<GeneratedText> ignored;
    s = t->generate(first, o, &ignored);
    if (!s.ok()) throw std::runtime_error(s.message());
  }
  std::vector<std::string> hyps(sources.size());
  int64_t tokens = 0;
  t->model().reset_run_times();
  const auto start = std::chrono::steady_clock::now();
  generate_lines(*t, sources, o, [&](size_t i, const GeneratedText& r) {
    hyps[i] = r.text;
    if (!r.ids.empty()) tokens += static_cast<int64_t>(r.ids.size()) - 1;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (a.profile) print_run_times(t->model(), seconds, json);
  const BleuScore bleu = corpus_bleu(hyps, targets);
  const ChrfScore chrf = corpus_chrf(hyps, targets);
  if (json) {
    fmt::print("{}\n", nlohmann::json{{"lines", sources.size()},
                                      {"device", t->info().device},
                                      {"seconds", seconds},
                                      {"generated_tokens", tokens},
                                      {"tokens_per_s", tokens / seconds},
                                      {"bleu", bleu.score},
                                      {"bleu_signature", bleu.signature},
                                      {"chrf", chrf.score},
                                      {"chrf_signature", chrf.signature}}
                           .dump());
    return 0;
  }
  fmt::print("{} lines on {} in {:.1f} s, {:.0f} generated tokens/s\n", sources.size(), t->info().device, seconds,
             tokens / seconds);
  fmt::print("BLEU {:.2f}  ({})\nchrF {:.2f}  ({})\n", bleu.score, bleu.signature, chrf.score, chrf.signature);
  return 0;
}

// A detector bundle on a YOLO-format folder: COCO mAP of its detections.
int eval_detection(const std::string& bundle, const classification::EvalOptions& o, int imgsz, int batch, bool square,
                   bool json) {
  detection::DetectionEvalOptions d;
  d.data = o.data;
  d.limit = o.limit;
  d.device = o.device;
  d.imgsz = imgsz;
  d.batch = batch;
  d.square = square;
  const auto r = detection::evaluate_detection(bundle, d);
  if (json) {
    fmt::print("{}\n", r.to_json().dump());
    return 0;
  }
  fmt::print("{} images ({}) on {} in {:.1f} s, {:.1f} images/s\n", r.images, r.data, r.device, r.seconds,
             r.images_per_s);
  fmt::print("per image: decode {:.2f} ms, letterbox {:.2f} ms, network {:.2f} ms, boxes back {:.3f} ms\n", r.decode_ms,
             r.preprocess_ms, r.inference_ms, r.postprocess_ms);
  fmt::print(
      "mAP50-95 {:.4f}  mAP50 {:.4f}  mAP75 {:.4f}  ({} classes, {} boxes, {} detections; COCO's rules, 100 a "
      "class and image)\n",
      r.map.map50_95, r.map.map50, r.map.map75, r.map.classes, r.map.ground_truth, r.map.detections);
  return 0;
}

}  // namespace

Command add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "eval",
      "Accuracy of a bundle on labelled images (and agreement with a reference), COCO mAP of a detector on a YOLO "
      "folder, or BLEU/chrF of a text bundle");
  auto o = std::make_shared<classification::EvalOptions>();
  auto json = std::make_shared<bool>(false);
  auto bundle = std::make_shared<std::string>();
  cmd->add_option("bundle", *bundle, "Bundle file")->required();
  auto text = std::make_shared<TextEvalArgs>();
  cmd->add_option("--data", o->data,
                  "Images: WebDataset shards (file, folder, glob), a folder with labels.tsv, or an ImageFolder");
  cmd->add_option("--source", text->source, "Text: source sentences, one a line");
  cmd->add_option("--target", text->target, "Text: reference translations or summaries, one a line");
  cmd->add_option("--beams", text->beams, "Text: beam size (default: the bundle's)")->check(CLI::Range(1, 64));
  cmd->add_option("--max-new-tokens", text->max_new_tokens, "Text: most tokens per output")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--warmup", text->warmup, "Text: generate the first N lines once before timing");
  cmd->add_flag("--profile", text->profile, "Text: also print the timed run's time per graph (stderr with --json)");
  cmd->add_option("--min-new-tokens", text->min_new_tokens, "Text: no end of sequence before this many tokens")
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--limit", o->limit, "Evaluate only the first N images")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  cmd->add_option("--reference", o->reference,
                  "cpu or cpu-reference (this bundle on the CPU's fast or reference kernels), another .bundle (run on "
                  "the CPU), or logits saved by --save-logits");
  cmd->add_option("--save-logits", o->save_logits, "Write this run's logits and labels to a .safetensors file");
  add_device_option(cmd, o->device);
  auto* batch_opt =
      cmd->add_option("--batch", o->batch, "Images per engine call (detection: default 1)")->check(CLI::Range(1, 4096));
  auto imgsz = std::make_shared<int>(0);
  cmd->add_option("--imgsz", *imgsz, "Detection: letterbox size (default: the bundle's)")->check(CLI::Range(32, 8192));
  auto square = std::make_shared<bool>(false);
  cmd->add_flag("--square", *square, "Detection: pad every image to imgsz x imgsz, so that a --batch is one call");
  cmd->add_flag("--json", *json, "Print one JSON object as the last line of stdout");
  return [o, json, bundle, text, imgsz, square, batch_opt] {
    if (!text->source.empty() || !text->target.empty()) {
      if (text->source.empty() || text->target.empty() || !o->data.empty())
        throw std::runtime_error("[eval] text evaluation takes --source and --target (and no --data)");
      text->limit = o->limit;
      return eval_text(*bundle, *text, o->device, o->batch, *json);
    }
    if (o->data.empty()) throw std::runtime_error("[eval] give --data (images) or --source and --target (text)");
    if (Bundle::open(*bundle)->manifest().at("task").value("type", "") == "object_detection")
      return eval_detection(*bundle, *o, *imgsz, batch_opt->count() ? o->batch : 1, *square, *json);
    if (*imgsz || *square) throw std::runtime_error("[eval] --imgsz and --square are for detector bundles");
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
