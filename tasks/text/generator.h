// Generation with an encoder-decoder bundle (graphs "encoder", "decoder_step", "decoder_topk"; see
// graph/encoder_decoder.h): greedy and beam search as transformers' generate() does them,
// with its logits processors (repetition penalty, no-repeat n-grams, bad words, minimum
// length, forced BOS/EOS), over a batch of decoder slots. Each slot holds one source's beams;
// when a source finishes, the next waiting source takes its slot at once (the encoder writes
// its cross-attention keys and values into the slot, once for all its beams), so a batch never
// waits for its longest sentence.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tasks/text/generation_config.h"

namespace kiln {

struct GeneratedSequence {
  std::vector<int64_t> ids;  // decoder start token first, EOS last when generated
  // Beam search: the finished beam's sum(log p) / length ** length_penalty, as transformers'
  // sequences_scores; greedy: the same formula over the chosen tokens.
  double score = 0;
};

class Seq2SeqGenerator {
 public:
  // The model must stay alive; vocab is the logits' width.
  Seq2SeqGenerator(Model& model, int64_t vocab, int64_t source_capacity, int64_t target_capacity);

  // Generates for every source (encoder ids, special tokens included), `slots` sources at a
  // time; results in input order. on_done(i) is called as source i finishes.
  std::vector<GeneratedSequence> generate(const std::vector<std::vector<int64_t>>& sources,
                                          const GenerationConfig& config, int slots,
                                          const std::function<void(size_t)>& on_done = {});

 private:
  Model& model_;
  int64_t vocab_, source_capacity_, target_capacity_;
  // The caches' capacities (source tokens, output tokens) of the largest call so far: every call
  // sizes its caches this large at least, so that a long-lived generator settles on one set of
  // engine plans (each capacity is a plan of its own: memory, tuning, a captured CUDA graph)
  // instead of planning again whenever a batch's longest sentence falls in another size bucket.
  // Larger caches cost memory only: attention walks each row's valid keys.
  int64_t memory_capacity_ = 0, cache_capacity_ = 0;
};

}  // namespace kiln
