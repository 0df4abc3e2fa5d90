#include "tasks/text/generator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <set>

#include "core/error.h"
#include "graph/encoder_decoder.h"

namespace kiln {

namespace {

// Scores are float32, as in transformers, so that its "-1e9" masks round the same way
// (-1e9 + a log-probability is -1e9 in float32).
constexpr float kMasked = -1.0e9f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The tokens transformers' logits processors forbid next for a sequence of cur_len tokens
// (start token included): repeated n-grams, bad words, EOS before the minimum length. Into
// `out` (cleared first; its memory is reused from step to step).
void banned_tokens(const GenerationConfig& g, const std::vector<int64_t>& seq, std::vector<int64_t>& out) {
  out.clear();
  const int64_t cur_len = static_cast<int64_t>(seq.size());
  const int n = g.no_repeat_ngram_size;
  if (n > 0 && cur_len + 1 >= n) {
    // Tokens that followed earlier occurrences of the last n - 1 tokens.
    const int64_t start = cur_len - (n - 1);
    for (int64_t i = 0; i + n <= cur_len; ++i)
      if (std::equal(seq.begin() + i, seq.begin() + i + n - 1, seq.begin() + start)) out.push_back(seq[i + n - 1]);
  }
  for (const auto& bad : g.bad_words_ids) {
    // transformers drops a bad word that is just an EOS token.
    if (bad.size() == 1 && std::count(g.eos_token_ids.begin(), g.eos_token_ids.end(), bad[0])) continue;
    const int64_t prefix = static_cast<int64_t>(bad.size()) - 1;
    if (prefix <= cur_len && std::equal(bad.begin(), bad.end() - 1, seq.end() - prefix)) out.push_back(bad.back());
  }
  const bool min_len = cur_len < g.min_length;
  const bool min_new = g.min_new_tokens >= 0 && cur_len - 1 < g.min_new_tokens;
  if (min_len || min_new) out.insert(out.end(), g.eos_token_ids.begin(), g.eos_token_ids.end());
}

// The token forced next (forced BOS first, forced EOS at the last position), or -1.
int64_t forced_token(const GenerationConfig& g, int64_t max_length, int64_t cur_len) {
  if (g.forced_bos_token_id >= 0 && cur_len == 1) return g.forced_bos_token_id;
  if (g.forced_eos_token_id >= 0 && cur_len == max_length - 1) return g.forced_eos_token_id;
  return -1;
}

// All of transformers' processors for these settings, in its order, on one row of scores
// (logits for greedy, log-probabilities for beam search).
void process(const GenerationConfig& g, int64_t max_length, const std::vector<int64_t>& seq, float* scores,
             int64_t vocab) {
  if (g.repetition_penalty != 1.0) {
    const float p = static_cast<float>(g.repetition_penalty);
    for (int64_t t : std::set<int64_t>(seq.begin(), seq.end()))
      if (t >= 0 && t < vocab) scores[t] = scores[t] < 0 ? scores[t] * p : scores[t] / p;
  }
  std::vector<int64_t> banned;
  banned_tokens(g, seq, banned);
  for (int64_t t : banned) scores[t] = kNegInf;
  if (const int64_t f = forced_token(g, max_length, static_cast<int64_t>(seq.size())); f >= 0) {
    std::fill(scores, scores + vocab, kNegInf);
    scores[f] = 0;
  }
}

void log_softmax(const float* logits, float* out, int64_t vocab) {
  const float m = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - m);
  const double log_sum = std::log(sum);
  for (int64_t v = 0; v < vocab; ++v) out[v] = static_cast<float>(logits[v] - m - log_sum);
}

// Sizes the device graphs are planned for: each distinct size is an engine plan (memory, a
// captured CUDA graph) kept for the model's life, so lengths are rounded up to a few buckets
// (8, 12, 16, 24, 32, 48, ...: at most 1.5x the need) and capped at the model's capacity.
// Padded cache positions cost memory only (attention walks each row's valid keys); padded
// source tokens cost the encoder up to half as much work again, once per source.
int64_t size_bucket(int64_t n, int64_t cap) {
  int64_t b = 8;
  while (b < n && b < cap) b = (b & (b - 1)) == 0 ? b + b / 2 : (b / 3) * 4;
  return std::min(b, cap);
}

bool is_eos(const GenerationConfig& g, int64_t token) {
  return std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), token) != g.eos_token_ids.end();
}

float length_divisor(int64_t generated, double penalty) {
  return static_cast<float>(std::pow(static_cast<double>(generated), penalty));
}

float length_normalized(float score, int64_t generated, double penalty) {
  return score / length_divisor(generated, penalty);
}

// One source's beams, as transformers' _beam_search keeps them for one batch entry.
struct Slot {
  int64_t source = -1;                        // index of the source, -1: free
  std::vector<std::vector<int64_t>> running;  // per beam
  std::vector<std::vector<int64_t>> next;     // the next step's beams are built here, then swapped with running
  std::vector<float> running_scores;
  std::vector<std::vector<int64_t>> finished;  // the best `beams` finished, best first
  std::vector<float> finished_scores;
  std::vector<bool> finished_valid;
  bool can_improve = true;  // transformers' is_early_stop_heuristic_unsatisfied
  float greedy_score = 0;   // greedy: sum of the chosen tokens' log-probabilities
  bool done = false;
};

struct Candidate {
  float score;
  int64_t beam, token;
};

// The k best of scores[0..n) (ties: lower index first), best first, into idx.
void top_k(const float* scores, int64_t n, int64_t k, std::vector<int64_t>& idx) {
  idx.resize(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, n);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  idx.resize(static_cast<size_t>(k));
}

class Run {
 public:
  Run(Model& model, int64_t vocab, int64_t memory_capacity, int64_t cache_capacity, const GenerationConfig& g,
      int64_t max_length, int slots, const std::vector<std::vector<int64_t>>& sources,
      const std::function<void(size_t)>& on_done)
      : model_(model),
        vocab_(vocab),
        g_(g),
        max_length_(max_length),
        beams_(g.num_beams),
        rows_(static_cast<int64_t>(slots) * g.num_beams),
        sources_(sources),
        on_done_(on_done),
        slots_(static_cast<size_t>(slots)),
        memory_(HostTensor::zeros("memory_capacity", DType::I64, {memory_capacity})),
        slot_capacity_(HostTensor::zeros("slot_capacity", DType::I64, {slots})),
        cache_(HostTensor::zeros("cache_capacity", DType::I64, {cache_capacity})),
        cache_rows_(HostTensor::zeros("cache_rows", DType::I32, {rows_, cache_capacity})),
        cross_rows_(HostTensor::zeros("cross_rows", DType::I32, {rows_, memory_capacity})),
        results_(sources.size()) {
    // Longest sources first (ties in input order): the slots that free up together then take
    // sources of similar lengths, whose encoder batch pads less (a batch is padded to its longest
    // source). CTranslate2 sorts what it reads ahead the same way. Results keep the input order.
    for (size_t i = 0; i < sources.size(); ++i) waiting_.push_back(static_cast<int64_t>(i));
    std::stable_sort(waiting_.begin(), waiting_.end(),
                     [&](int64_t a, int64_t b) { return sources[a].size() > sources[b].size(); });
    // Row r (a beam) reads its source's cross-attention keys from slot r / beams, at every position.
    int32_t* cross = cross_rows_.as<int32_t>();
    for (int64_t r = 0; r < rows_; ++r)
      std::fill_n(cross + r * memory_capacity, memory_capacity, static_cast<int32_t>(r / beams_));
  }

  std::vector<GeneratedSequence> go() {
    model_.reset_states();
    source_length_.assign(static_cast<size_t>(rows_), 1);
    while (true) {
      refill();
      if (std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.source >= 0; })) break;
      step();
    }
    return std::move(results_);
  }

 private:
  // Puts waiting sources into free slots and runs the encoder over them.
  void refill() {
    std::vector<int64_t> taken;  // slot per new source
    for (size_t s = 0; s < slots_.size() && !waiting_.empty(); ++s) {
      if (slots_[s].source >= 0) continue;
      start(slots_[s], waiting_.front());
      waiting_.pop_front();
      taken.push_back(static_cast<int64_t>(s));
    }
    if (taken.empty()) return;
    // Padded to a size bucket of tokens and a power of two of sources, so that few shapes
    // (engine plans) serve every batch; padding is masked out by the lengths.
    int64_t longest = 1;
    for (int64_t s : taken) longest = std::max<int64_t>(longest, sources_[slots_[s].source].size());
    const int64_t seq = size_bucket(longest, memory_.shape[0]);
    int64_t batch = 1;
    while (batch < static_cast<int64_t>(taken.size())) batch *= 2;
    std::vector<int64_t> ids(static_cast<size_t>(batch * seq), g_.pad_token_id >= 0 ? g_.pad_token_id : 0);
    std::vector<int64_t> lengths(static_cast<size_t>(batch), 1), positions(static_cast<size_t>(seq));
    std::iota(positions.begin(), positions.end(), 0);
    std::vector<int64_t> source_of_slot(slots_.size(), -1);
    for (size_t i = 0; i < taken.size(); ++i) {
      const auto& src = sources_[slots_[taken[i]].source];
      std::copy(src.begin(), src.end(), ids.begin() + static_cast<int64_t>(i) * seq);
      lengths[i] = static_cast<int64_t>(src.size());
      source_of_slot[taken[i]] = static_cast<int64_t>(i);
      for (int64_t b = 0; b < beams_; ++b) source_length_[taken[i] * beams_ + b] = lengths[i];
    }
    std::vector<HostTensor> out;
    check(
        model_.run({HostTensor::from_i64("ids", {batch, seq}, ids), HostTensor::from_i64("positions", {seq}, positions),
                    HostTensor::from_i64("length", {batch}, lengths),
                    HostTensor::from_i64("slots", {static_cast<int64_t>(slots_.size())}, source_of_slot), memory_},
                   &out, "encoder"));
  }

  void start(Slot& s, int64_t source) {
    s = Slot{};
    s.source = source;
    s.running.assign(static_cast<size_t>(beams_), {g_.decoder_start_token_id});
    s.running_scores.assign(static_cast<size_t>(beams_), kMasked);
    s.running_scores[0] = 0;
    s.finished.assign(static_cast<size_t>(beams_), {});
    s.finished_scores.assign(static_cast<size_t>(beams_), kMasked);
    s.finished_valid.assign(static_cast<size_t>(beams_), false);
  }

  void step() {
    std::vector<int64_t> ids(static_cast<size_t>(rows_), g_.decoder_start_token_id), position(ids.size(), 0);
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].source < 0) continue;
      for (int64_t b = 0; b < beams_; ++b) {
        const auto& seq = slots_[s].running[b];
        ids[s * beams_ + b] = seq.back();
        position[s * beams_ + b] = static_cast<int64_t>(seq.size()) - 1;
      }
    }
    std::vector<int64_t> length(position);
    for (auto& l : length) ++l;
    // Each row writes this step's keys and values into its own cache row.
    const int64_t capacity = cache_rows_.shape[1];
    int32_t* table = cache_rows_.as<int32_t>();
    for (int64_t r = 0; r < rows_; ++r) table[r * capacity + position[r]] = static_cast<int32_t>(r);
    // The tables and the capacity inputs are lent to the run and taken back after it, not copied
    // (the cache table is 48 KiB at 128 rows and 96 positions, every step).
    std::vector<HostTensor> in = {HostTensor::from_i64("ids", {rows_, 1}, ids),
                                  HostTensor::from_i64("position", {rows_}, position),
                                  HostTensor::from_i64("length", {rows_}, length),
                                  HostTensor::from_i64("source_length", {rows_}, source_length_),
                                  std::move(cache_rows_),
                                  std::move(cross_rows_),
                                  std::move(slot_capacity_),
                                  std::move(cache_)};
    const auto take_back = [&] {
      cache_rows_ = std::move(in[4]);
      cross_rows_ = std::move(in[5]);
      slot_capacity_ = std::move(in[6]);
      cache_ = std::move(in[7]);
    };
    Scores scores;
    std::vector<HostTensor> out;
    if (device_top_k_) {
      // Each row's bans go to the device, which returns the best tokens after them.
      auto& bans = bans_;
      bans.resize(static_cast<size_t>(rows_));
      size_t widest = 1;
      for (size_t s = 0; s < slots_.size(); ++s)
        for (int64_t b = 0; b < beams_; ++b) {
          auto& row = bans[s * beams_ + b];
          row.clear();
          if (slots_[s].source < 0) continue;
          banned_tokens(g_, slots_[s].running[b], row);
          widest = std::max(widest, row.size());
        }
      // Widths in powers of two: each width is a plan of its own (and a CUDA graph).
      size_t width = 8;
      while (width < widest) width *= 2;
      widest = width;
      std::vector<int64_t> banned(static_cast<size_t>(rows_) * widest, -1);
      for (size_t r = 0; r < bans.size(); ++r) std::copy(bans[r].begin(), bans[r].end(), banned.begin() + r * widest);
      in.push_back(HostTensor::from_i64("banned", {rows_, static_cast<int64_t>(widest)}, banned));
      const Status status = model_.run(in, &out, "decoder_topk");
      take_back();
      check(status);
      KILN_CHECK(out.size() == 2 && out[0].dtype == DType::F32 && out[1].dtype == DType::I64 &&
                     out[0].numel() == rows_ * kEncoderDecoderTopK && out[1].numel() == out[0].numel(),
                 "[generate] the decoder gave no [{}, {}] best tokens", rows_, kEncoderDecoderTopK);
      scores.top = out[0].as<float>();
      scores.tokens = out[1].as<int64_t>();
    } else {
      const Status status = model_.run(in, &out, "decoder_step");
      take_back();
      check(status);
      KILN_CHECK(out.size() == 1 && out[0].dtype == DType::F32 && out[0].numel() == rows_ * vocab_,
                 "[generate] the decoder step gave no [{}, {}] f32 logits", rows_, vocab_);
      scores.logits = out[0].as<float>();
    }
    std::vector<int64_t> parent(static_cast<size_t>(beams_));  // the beam of its slot each beam continues
    for (size_t s = 0; s < slots_.size(); ++s) {
      Slot& slot = slots_[s];
      if (slot.source < 0) continue;
      const int64_t base = static_cast<int64_t>(s) * beams_;
      std::iota(parent.begin(), parent.end(), 0);
      if (beams_ == 1)
        greedy(slot, scores, base);
      else if (beam(slot, scores, parent.data(), base))
        continue_beams(base, parent, length[base]);
      if (slot.done) finish(slot);
    }
  }

  // Beam j of the slot at `base` continues beam parent[j]: it takes that beam's history, the
  // cache rows of its first `length` positions (the caches themselves do not move).
  void continue_beams(int64_t base, const std::vector<int64_t>& parent, int64_t length) {
    const int64_t capacity = cache_rows_.shape[1];
    int32_t* table = cache_rows_.as<int32_t>() + base * capacity;
    table_copy_.assign(table, table + beams_ * capacity);
    for (int64_t j = 0; j < beams_; ++j)
      if (parent[j] != j) std::copy_n(table_copy_.begin() + parent[j] * capacity, length, table + j * capacity);
  }

  // A step's scores: the vocabulary's logits per row, or each row's best tokens after bans.
  struct Scores {
    float* logits = nullptr;
    const float* top = nullptr;
    const int64_t* tokens = nullptr;
  };

  void greedy(Slot& s, const Scores& scores, int64_t row) {
    auto& seq = s.running[0];
    const int64_t forced = forced_token(g_, max_length_, static_cast<int64_t>(seq.size()));
    int64_t token;
    float lp = 0;  // the chosen token's log-probability (a forced token counts 0)
    if (scores.logits) {
      float* logits = scores.logits + row * vocab_;
      std::vector<float> all(static_cast<size_t>(vocab_));
      log_softmax(logits, all.data(), vocab_);
      process(g_, max_length_, seq, logits, vocab_);
      token = std::max_element(logits, logits + vocab_) - logits;
      lp = all[token];
    } else {
      token = scores.tokens[row * kEncoderDecoderTopK];
      lp = scores.top[row * kEncoderDecoderTopK];
    }
    if (forced >= 0) {
      token = forced;
      lp = 0;
    }
    s.greedy_score += lp;
    seq.push_back(token);
    s.done = is_eos(g_, token) || static_cast<int64_t>(seq.size()) >= max_length_;
  }

  // One step of transformers' beam search for one source. Writes the beam each new running
  // beam continues (0 to beams - 1) into parent; returns whether any beam changed rows.
  bool beam(Slot& s, const Scores& scores, int64_t* parent, int64_t base) {
    const int64_t cur_len = static_cast<int64_t>(s.running[0].size());
    const int64_t keep = std::max<int64_t>(2, 1 + static_cast<int64_t>(g_.eos_token_ids.size())) * beams_;
    std::vector<Candidate>& cand = cand_;
    cand.clear();
    if (scores.logits) {
      std::vector<float> acc(static_cast<size_t>(beams_ * vocab_));
      for (int64_t b = 0; b < beams_; ++b) {
        float* lp = acc.data() + b * vocab_;
        log_softmax(scores.logits + (base + b) * vocab_, lp, vocab_);
        process(g_, max_length_, s.running[b], lp, vocab_);
        for (int64_t v = 0; v < vocab_; ++v) lp[v] += s.running_scores[b];
      }
      top_k(acc.data(), beams_ * vocab_, keep, order_);
      for (int64_t i : order_) cand.push_back({acc[i], i / vocab_, i % vocab_});
    } else {
      // The best `keep` over all beams are among each beam's best `keep` (keep <= K; a row's
      // best tokens come best first).
      const int64_t forced = forced_token(g_, max_length_, cur_len);
      for (int64_t b = 0; b < beams_; ++b) {
        if (forced >= 0) {
          cand.push_back({0.0f + s.running_scores[b], b, forced});
          continue;
        }
        const int64_t row = (base + b) * kEncoderDecoderTopK;
        for (int64_t j = 0; j < keep; ++j)
          if (scores.top[row + j] != kNegInf)
            cand.push_back({scores.top[row + j] + s.running_scores[b], b, scores.tokens[row + j]});
      }
      const auto best = cand.begin() + std::min<int64_t>(keep, static_cast<int64_t>(cand.size()));
      std::partial_sort(cand.begin(), best, cand.end(), [&](const Candidate& x, const Candidate& y) {
        return x.score > y.score || (x.score == y.score && x.beam * vocab_ + x.token < y.beam * vocab_ + y.token);
      });
      cand.erase(best, cand.end());
    }
    std::vector<char>& hits = hits_;
    hits.resize(cand.size());
    for (size_t k = 0; k < cand.size(); ++k) hits[k] = cur_len + 1 >= max_length_ || is_eos(g_, cand[k].token);

    // Next running beams: the best candidates that did not stop.
    std::vector<float>& running_scores = candidate_scores_;
    running_scores.resize(cand.size());
    for (size_t k = 0; k < cand.size(); ++k) running_scores[k] = cand[k].score + (hits[k] ? kMasked : 0.0f);
    std::vector<int64_t>& next = order_;
    top_k(running_scores.data(), static_cast<int64_t>(cand.size()), beams_, next);

    // Finished beams: candidates among the top `beams` that stopped, if they beat the kept ones.
    const bool all_finished = std::all_of(s.finished_valid.begin(), s.finished_valid.end(), [](bool f) { return f; });
    std::vector<float>& merged = merged_;
    merged.assign(s.finished_scores.begin(), s.finished_scores.end());
    const float divisor = length_divisor(cur_len, g_.length_penalty);
    for (size_t k = 0; k < cand.size(); ++k) {
      float score = cand[k].score / divisor;
      if (all_finished && g_.early_stopping == EarlyStopping::True) score += kMasked;
      if (!s.can_improve) score += kMasked;
      const bool just_finished = hits[k] && static_cast<int64_t>(k) < beams_;
      if (!just_finished) score += kMasked;
      merged.push_back(score);
    }
    std::vector<int64_t>& best = best_;
    top_k(merged.data(), static_cast<int64_t>(merged.size()), beams_, best);
    // Most steps keep the finished beams as they are (best is 0, 1, ...): nothing to copy then.
    bool kept = true;
    for (size_t j = 0; j < best.size(); ++j) kept = kept && best[j] == static_cast<int64_t>(j);
    if (!kept) {
      std::vector<std::vector<int64_t>> finished;
      std::vector<float> finished_scores;
      std::vector<bool> finished_valid;
      for (int64_t i : best) {
        if (i < beams_) {
          finished.push_back(std::move(s.finished[i]));
          finished_valid.push_back(s.finished_valid[i]);
        } else {
          const Candidate& c = cand[i - beams_];
          finished.push_back(s.running[c.beam]);
          finished.back().push_back(c.token);
          finished_valid.push_back(hits[i - beams_] && i - beams_ < beams_);
        }
        finished_scores.push_back(merged[i]);
      }
      s.finished = std::move(finished);
      s.finished_scores = std::move(finished_scores);
      s.finished_valid = std::move(finished_valid);
    }

    // The next beams are made in s.next, whose vectors keep their memory from step to step.
    s.next.resize(next.size());
    s.running_scores.resize(next.size());
    bool moved = false;
    for (size_t j = 0; j < next.size(); ++j) {
      const Candidate& c = cand[next[j]];
      s.next[j].assign(s.running[c.beam].begin(), s.running[c.beam].end());
      s.next[j].push_back(c.token);
      s.running_scores[j] = running_scores[next[j]];
      parent[j] = c.beam;
      moved |= c.beam != static_cast<int64_t>(j);
    }
    std::swap(s.running, s.next);

    // Can a running beam still beat the worst finished one?
    const int64_t next_len = cur_len + 1;
    const int64_t best_len =
        g_.early_stopping == EarlyStopping::Never && g_.length_penalty > 0.0 ? max_length_ - 1 : next_len - 1;
    const float best_possible = length_normalized(s.running_scores[0], best_len, g_.length_penalty);
    const float worst = *std::min_element(s.finished_scores.begin(), s.finished_scores.end());
    bool improvable = false;
    for (int64_t b = 0; b < beams_; ++b) improvable |= best_possible > (s.finished_valid[b] ? worst : kMasked);
    s.can_improve = s.can_improve && improvable;
    const bool now_all_finished =
        std::all_of(s.finished_valid.begin(), s.finished_valid.end(), [](bool f) { return f; });
    const bool open_beam = !(now_all_finished && g_.early_stopping == EarlyStopping::True);
    const bool continuations = !std::all_of(hits.begin(), hits.end(), [](char h) { return h != 0; });
    s.done = !(s.can_improve && open_beam && continuations);
    return moved;
  }

  void finish(Slot& s) {
    GeneratedSequence& r = results_[s.source];
    if (beams_ == 1) {
      r.ids = s.running[0];
      r.score = length_normalized(s.greedy_score, static_cast<int64_t>(r.ids.size()) - 1, g_.length_penalty);
    } else {
      r.ids = s.finished[0];
      r.score = s.finished_scores[0];
      // No beam finished (cannot happen before max_length): the placeholder holds no tokens.
      if (r.ids.empty()) r.ids = s.running[0];
    }
    if (on_done_) on_done_(static_cast<size_t>(s.source));
    s = Slot{};
  }

  static void check(const Status& st) { KILN_CHECK(st.ok(), "{}", st.message()); }

  Model& model_;
  int64_t vocab_;
  const GenerationConfig& g_;
  int64_t max_length_, beams_, rows_;
  const std::vector<std::vector<int64_t>>& sources_;
  const std::function<void(size_t)>& on_done_;
  std::vector<Slot> slots_;
  std::deque<int64_t> waiting_;
  std::vector<int64_t> source_length_;
  HostTensor memory_, slot_capacity_, cache_;  // inputs whose lengths size the caches
  HostTensor cache_rows_;  // [rows, cache]: the cache row holding each position of each row's history
  HostTensor cross_rows_;  // [rows, memory]: each row's slot (its source's cross-attention keys)
  std::vector<GeneratedSequence> results_;
  // Scratch of every step, kept so that its memory is reused: each row's bans, a slot's
  // candidates, their scores and flags, orders, and a slot's cache table before a reorder.
  std::vector<std::vector<int64_t>> bans_;
  std::vector<Candidate> cand_;
  std::vector<float> candidate_scores_, merged_;
  std::vector<char> hits_;
  std::vector<int64_t> order_, best_;
  std::vector<int32_t> table_copy_;
  // Scores come from the device's best tokens unless a setting needs every logit (a repetition
  // penalty changes scores, not just bans) or beam search keeps more than they hold.
  bool device_top_k_ =
      g_.repetition_penalty == 1.0 &&
      std::max<int64_t>(2, 1 + static_cast<int64_t>(g_.eos_token_ids.size())) * beams_ <= kEncoderDecoderTopK;
};

}  // namespace

Seq2SeqGenerator::Seq2SeqGenerator(Model& model, int64_t vocab, int64_t source_capacity, int64_t target_capacity)
    : model_(model), vocab_(vocab), source_capacity_(source_capacity), target_capacity_(target_capacity) {}

std::vector<GeneratedSequence> Seq2SeqGenerator::generate(const std::vector<std::vector<int64_t>>& sources,
                                                          const GenerationConfig& config, int slots,
                                                          const std::function<void(size_t)>& on_done) {
  config.validate(vocab_);
  KILN_CHECK(slots >= 1, "[generate] the batch must hold at least one source");
  for (size_t i = 0; i < sources.size(); ++i) {
    KILN_CHECK(!sources[i].empty() && static_cast<int64_t>(sources[i].size()) <= source_capacity_,
               "[generate] source {} has {} tokens; the model takes 1 to {}", i, sources[i].size(), source_capacity_);
    for (int64_t id : sources[i])
      KILN_CHECK(id >= 0 && id < vocab_, "[generate] source {}: token id {} is outside the vocabulary", i, id);
  }
  // Positions past the decoder's capacity do not exist: longer requests stop there.
  const int64_t max_length = std::min(config.effective_max_length(), target_capacity_);
  slots = static_cast<int>(std::min<size_t>(static_cast<size_t>(slots), std::max<size_t>(sources.size(), 1)));
  int64_t longest = 1;
  for (const auto& src : sources) longest = std::max<int64_t>(longest, static_cast<int64_t>(src.size()));
  memory_capacity_ = std::max(memory_capacity_, size_bucket(longest, source_capacity_));
  cache_capacity_ = std::max(cache_capacity_, size_bucket(max_length, target_capacity_));
  Run run(model_, vocab_, memory_capacity_, cache_capacity_, config, max_length, slots, sources, on_done);
  return run.go();
}

}  // namespace kiln
