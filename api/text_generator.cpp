// kiln::TextGenerator: a bundle whose task is translation or summarization, run through
// tasks/text (tokenizer, generator) on a kiln::Model.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"
#include "core/json_int.h"
#include "kiln/kiln.h"
#include "tasks/text/generator.h"
#include "tasks/text/tokenizer.h"

namespace kiln {

struct TextGenerator::Impl {
  std::unique_ptr<Model> model;
  std::unique_ptr<TextTokenizer> tokenizer;
  std::unique_ptr<Seq2SeqGenerator> generator;  // kept: it keeps the caches' sizes between calls
  GenerationConfig defaults;
  int64_t vocab = 0, source_capacity = 0, target_capacity = 0;

  GenerationConfig config(const GenerationOptions& o) const {
    GenerationConfig g = defaults;
    if (o.num_beams) g.num_beams = *o.num_beams;
    if (o.max_new_tokens) g.max_new_tokens = *o.max_new_tokens;
    if (o.max_length) {
      g.max_length = *o.max_length;
      if (!o.max_new_tokens) g.max_new_tokens = -1;
    }
    if (o.min_length) g.min_length = *o.min_length;
    if (o.min_new_tokens) g.min_new_tokens = *o.min_new_tokens;
    if (o.no_repeat_ngram_size) g.no_repeat_ngram_size = *o.no_repeat_ngram_size;
    if (o.length_penalty) g.length_penalty = *o.length_penalty;
    if (o.repetition_penalty) g.repetition_penalty = *o.repetition_penalty;
    KILN_CHECK(g.max_new_tokens < 0 || g.max_new_tokens >= 1, "[generate] max_new_tokens must be at least 1");
    // Asked for, a contradiction is refused; the bundle's own settings alone are taken as they are.
    KILN_CHECK(!(o.min_new_tokens || o.max_new_tokens) || g.min_new_tokens < 0 || g.max_new_tokens < 0 ||
                   g.min_new_tokens <= g.max_new_tokens,
               "[generate] min_new_tokens ({}) is more than max_new_tokens ({})", g.min_new_tokens, g.max_new_tokens);
    KILN_CHECK(g.repetition_penalty > 0, "[generate] repetition_penalty must be positive");
    return g;
  }

  std::vector<GeneratedText> run(const std::vector<std::vector<int64_t>>& sources, const GenerationOptions& o) {
    KILN_CHECK(o.batch >= 1 && o.batch <= 4096, "[generate] batch {} is outside [1, 4096]", o.batch);
    const auto seqs = generator->generate(sources, config(o), o.batch, o.on_done);
    std::vector<GeneratedText> out(seqs.size());
    for (size_t i = 0; i < seqs.size(); ++i) {
      out[i].source_ids = sources[i];
      out[i].ids = seqs[i].ids;
      out[i].score = seqs[i].score;
      out[i].text = tokenizer->decode(seqs[i].ids);
    }
    return out;
  }
};

TextGenerator::TextGenerator() : impl_(std::make_unique<Impl>()) {}
TextGenerator::~TextGenerator() = default;

Status TextGenerator::load(const std::string& path, std::unique_ptr<TextGenerator>* out, const std::string& device) {
  try {
    std::unique_ptr<TextGenerator> t(new TextGenerator());
    Impl& i = *t->impl_;
    Status s = Model::load(path, &i.model, device);
    if (!s.ok()) return s;
    const std::string& task = i.model->info().task;
    KILN_CHECK(task == "translation" || task == "summarization",
               "[generate] {} is a {} bundle, not translation or summarization", path, task);
    const nlohmann::json tc = nlohmann::json::parse(i.model->task_settings_json());
    i.vocab = json_int(tc.value("vocab_size", nlohmann::json()), 1, 1 << 24, "[generate] task vocab_size");
    i.source_capacity =
        json_int(tc.value("source_capacity", nlohmann::json()), 1, 1 << 16, "[generate] task source_capacity");
    i.target_capacity =
        json_int(tc.value("target_capacity", nlohmann::json()), 2, 1 << 16, "[generate] task target_capacity");
    // Bundles built before a source's beams shared its cross-attention keys (one slot) have a
    // decoder without cross_rows (and, older still, without cache_rows): their interface is not
    // this generator's.
    const auto step = i.model->inputs("decoder_topk");
    KILN_CHECK(std::any_of(step.begin(), step.end(), [](const TensorSpec& t) { return t.name == "cross_rows"; }),
               "[generate] {} was built by an older kiln (its decoder takes no cross_rows): build it again", path);
    i.tokenizer = make_tokenizer(tc.value("tokenizer", nlohmann::json()));
    i.defaults = GenerationConfig::from_json(tc.value("generation", nlohmann::json()), i.vocab);
    i.generator = std::make_unique<Seq2SeqGenerator>(*i.model, i.vocab, i.source_capacity, i.target_capacity);
    *out = std::move(t);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

const ModelInfo& TextGenerator::info() const { return impl_->model->info(); }

Model& TextGenerator::model() { return *impl_->model; }

Status TextGenerator::generate(const std::vector<std::string>& sources, const GenerationOptions& options,
                               std::vector<GeneratedText>* out) {
  try {
    std::vector<std::vector<int64_t>> ids(sources.size());
    std::vector<bool> truncated(sources.size());
    for (size_t k = 0; k < sources.size(); ++k) {
      KILN_CHECK(valid_utf8(sources[k]), "[generate] source {} is not valid UTF-8", k);
      bool cut = false;
      ids[k] = impl_->tokenizer->encode_source(sources[k], static_cast<size_t>(impl_->source_capacity), &cut);
      truncated[k] = cut;
    }
    *out = impl_->run(ids, options);
    for (size_t k = 0; k < out->size(); ++k) (*out)[k].truncated = truncated[k];
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

Status TextGenerator::generate_ids(const std::vector<std::vector<int64_t>>& sources, const GenerationOptions& options,
                                   std::vector<GeneratedText>* out) {
  try {
    *out = impl_->run(sources, options);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

Status TextGenerator::tokenize(const std::string& text, bool target, std::vector<int64_t>* ids) {
  try {
    bool cut = false;
    *ids = target ? impl_->tokenizer->encode_target(text)
                  : impl_->tokenizer->encode_source(text, static_cast<size_t>(impl_->source_capacity), &cut);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  }
}

}  // namespace kiln
