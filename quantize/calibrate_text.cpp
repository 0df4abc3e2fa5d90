#include "quantize/calibrate_text.h"

#include <fstream>
#include <map>

#include "api/model_access.h"
#include "core/error.h"
#include "core/progress.h"
#include "kiln/kiln.h"
#include "quantize/calibration_bundle.h"

namespace kiln {

namespace {

std::vector<std::string> read_sentences(const std::string& path, size_t limit) {
  std::ifstream in(path);
  KILN_CHECK(in, "[calibrate] cannot read {}", path);
  std::vector<std::string> lines;
  std::string line;
  while (lines.size() < limit && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
  }
  KILN_CHECK(!lines.empty(), "[calibrate] {} holds no sentences", path);
  return lines;
}

}  // namespace

Fp8Clips calibrate_text_activations(const ModelDefinition& def, const std::vector<Fp8Layer>& layers,
                                    const QuantRecipe& recipe, const CalibrationOptions& o) {
  KILN_CHECK(o.samples > 0, "[calibrate] --calib-samples must be at least 1");
  const std::vector<std::string> sentences = read_sentences(o.data, o.samples);
  const CalibrationBundle bundle(def);
  std::unique_ptr<TextGenerator> generator;
  Status s = TextGenerator::load(bundle.path(), &generator, "cpu-reference");
  KILN_CHECK(s.ok(), "[calibrate] {}", s.message());

  std::map<std::string, AbsHistogram> hist;
  std::map<std::pair<std::string, std::string>, AbsHistogram*> by_node;  // (graph, node name)
  for (const auto& l : layers) by_node[{l.graph, def.graph(l.graph).nodes()[l.node].name}] = &hist[l.weight];
  ModelAccess::observe(generator->model(),
                       [&](const std::string& graph, const std::string& node, const float* x, int64_t count) {
                         auto it = by_node.find({graph, node});
                         if (it != by_node.end()) it->second->add(x, count);
                       });
  ProgressBar bar("calibrate", sentences.size());
  size_t done = 0;
  GenerationOptions g;
  g.num_beams = 1;  // greedy: the same layers over the same kind of activations, beams times cheaper
  // A model that never ends a sentence (random weights) would decode to its maximum length on
  // the reference kernels; 128 tokens show every layer plenty of positions.
  g.max_new_tokens = 128;
  g.batch = o.batch;
  g.on_done = [&](size_t) { bar.update(++done); };
  std::vector<GeneratedText> out;
  s = generator->generate(sentences, g, &out);
  KILN_CHECK(s.ok(), "[calibrate] {}", s.message());
  bar.finish();
  for (const auto& l : layers)
    KILN_CHECK(hist.at(l.weight).seen > 0, "[calibrate] layer {} of graph {} saw no input",
               def.graph(l.graph).nodes()[l.node].name, l.graph);
  return clips_of(hist, recipe, o);
}

}  // namespace kiln
