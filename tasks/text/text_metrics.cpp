// Follows sacreBLEU 2.4.3 (metrics/bleu.py, metrics/chrf.py, metrics/helpers.py,
// tokenizers/tokenizer_13a.py, tokenizers/tokenizer_re.py), operation by operation where the order
// of floating-point operations could change the last bits. Text is handled as Unicode code points
// because sacreBLEU works on Python str: chrF counts code points, and "whitespace" means Python's
// str.split() whitespace, which includes e.g. U+00A0 and U+3000.
#include "tasks/text/text_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/utf8.h"

namespace kiln {
namespace {

// sacreBLEU writes its own version into signatures; these rules are those of 2.4.3, the last
// 2.4.x release (2.5 and 2.6 compute the same scores).
constexpr const char* kSacrebleuVersion = "2.4.3";
constexpr int kBleuOrder = 4;
constexpr int kChrfOrder = 6;
constexpr int kChrfBetaSquared = 4;  // beta 2

using Text = std::u32string;
using NgramCounts = std::unordered_map<Text, int64_t>;

Text decode_line(const std::string& line, const char* metric, const char* side, size_t index) {
  Text text;
  KILN_CHECK(decode_utf8(line, text), "[{}] {} line {} is not valid UTF-8", metric, side, index + 1);
  return text;
}

// The characters Python's str.split() and str.rstrip() treat as whitespace (str.isspace()).
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<Text> split_words(const Text& line) {
  std::vector<Text> words;
  Text word;
  for (char32_t c : line) {
    if (!is_space(c)) {
      word.push_back(c);
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// Python's str.replace: one left-to-right pass, so text produced by a replacement is not matched
// again ("<skip<skipped>ped>" leaves "<skipped>").
Text replace_all(const Text& s, std::u32string_view from, std::u32string_view to) {
  Text out;
  size_t start = 0;
  for (size_t hit; (hit = s.find(from, start)) != Text::npos; start = hit + from.size()) {
    out.append(s, start, hit - start);
    out.append(to);
  }
  out.append(s, start);
  return out;
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool is_not_digit(char32_t c) { return !is_digit(c); }
bool is_period_or_comma(char32_t c) { return c == U'.' || c == U','; }
bool is_dash(char32_t c) { return c == U'-'; }

// 13a's first rule, [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and the space, except ' , - .
// (an apostrophe stays inside its word; period, comma and dash depend on digits around them).
bool is_13a_symbol(char32_t c) {
  return (c >= U'{' && c <= U'~') || (c >= U'[' && c <= U'`') || (c >= U' ' && c <= U'&') || (c >= U'(' && c <= U'+') ||
         (c >= U':' && c <= U'@') || c == U'/';
}

Text pad_symbols(const Text& s) {
  Text out;
  for (char32_t c : s) {
    if (is_13a_symbol(c)) {
      out.push_back(U' ');
      out.push_back(c);
      out.push_back(U' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// re.sub of a two-character pattern (first class, second class) by before + \1 + " " + \2 + after.
// Python resumes scanning after each match, so matches never overlap; the spaces a rule inserts
// are seen by the rules after it, so they are reproduced exactly rather than just splitting.
Text substitute_pairs(const Text& s, bool (*first)(char32_t), bool (*second)(char32_t), std::u32string_view before,
                      std::u32string_view after) {
  Text out;
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out.append(before);
      out.push_back(s[i]);
      out.push_back(U' ');
      out.push_back(s[i + 1]);
      out.append(after);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

// BLEU's preprocessing (rstrip) followed by the 13a tokenizer; returns the tokens.
std::vector<Text> tokenize_13a(Text line) {
  while (!line.empty() && is_space(line.back())) line.pop_back();
  line = replace_all(line, U"<skipped>", U"");
  line = replace_all(line, U"-\n", U"");
  line = replace_all(line, U"\n", U" ");
  // Unescaped in this order, once: "&amp;quot;" becomes "&quot;", not a quote.
  line = replace_all(line, U"&quot;", U"\"");
  line = replace_all(line, U"&amp;", U"&");
  line = replace_all(line, U"&lt;", U"<");
  line = replace_all(line, U"&gt;", U">");
  // The padding lets the period and comma rules see a non-digit at either end of the line.
  line = pad_symbols(U" " + line + U" ");
  line = substitute_pairs(line, is_not_digit, is_period_or_comma, U"", U" ");  // unless preceded by a digit
  line = substitute_pairs(line, is_period_or_comma, is_not_digit, U" ", U"");  // unless followed by a digit
  line = substitute_pairs(line, is_digit, is_dash, U"", U" ");                 // a dash after a digit
  return split_words(line);
}

// ---- BLEU ----

using WordNgrams = std::array<NgramCounts, kBleuOrder>;

// Keys join tokens with a space, which no token contains.
WordNgrams word_ngrams(const std::vector<Text>& tokens) {
  WordNgrams counts;
  for (size_t n = 1; n <= kBleuOrder; ++n) {
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      Text key = tokens[i];
      for (size_t k = 1; k < n; ++k) key += U' ' + tokens[i + k];
      ++counts[n - 1][key];
    }
  }
  return counts;
}

struct BleuStats {
  int64_t sys_len = 0, ref_len = 0;
  std::array<int64_t, kBleuOrder> correct{}, total{};
};

// The reference length closest to the hypothesis length; the shorter one on a tie.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best = ref_lens.front();
  for (int64_t len : ref_lens) {
    const int64_t diff = std::abs(hyp_len - len), best_diff = std::abs(hyp_len - best);
    if (diff < best_diff || (diff == best_diff && len < best)) best = len;
  }
  return best;
}

void add_segment_stats(const Text& hyp, const std::vector<Text>& refs, BleuStats& stats) {
  WordNgrams max_ref_counts;  // per n-gram, the largest count in any one reference
  std::vector<int64_t> ref_lens;
  for (const Text& ref : refs) {
    const std::vector<Text> tokens = tokenize_13a(ref);
    ref_lens.push_back(static_cast<int64_t>(tokens.size()));
    const WordNgrams counts = word_ngrams(tokens);
    for (int n = 0; n < kBleuOrder; ++n)
      for (const auto& [ngram, count] : counts[n]) max_ref_counts[n][ngram] = std::max(max_ref_counts[n][ngram], count);
  }
  const std::vector<Text> tokens = tokenize_13a(hyp);
  const auto hyp_len = static_cast<int64_t>(tokens.size());
  stats.sys_len += hyp_len;
  stats.ref_len += closest_ref_len(hyp_len, ref_lens);
  const WordNgrams hyp_counts = word_ngrams(tokens);
  for (int n = 0; n < kBleuOrder; ++n) {
    for (const auto& [ngram, count] : hyp_counts[n]) {
      stats.total[n] += count;
      const auto ref = max_ref_counts[n].find(ngram);
      if (ref != max_ref_counts[n].end()) stats.correct[n] += std::min(count, ref->second);
    }
  }
}

// sacreBLEU's log, which maps a zero precision to a huge negative number instead of -inf.
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

BleuScore bleu_from_stats(const BleuStats& s, size_t num_refs) {
  BleuScore out;
  out.sys_len = s.sys_len;
  out.ref_len = s.ref_len;
  out.sys_len_ratio = s.ref_len > 0 ? static_cast<double>(s.sys_len) / static_cast<double>(s.ref_len) : 0.0;
  out.bp = 1.0;
  if (s.sys_len < s.ref_len)
    out.bp = s.sys_len > 0 ? std::exp(1.0 - static_cast<double>(s.ref_len) / static_cast<double>(s.sys_len)) : 0.0;
  out.signature = fmt::format("nrefs:{}|case:mixed|eff:no|tok:13a|smooth:exp|version:{}", num_refs, kSacrebleuVersion);
  out.precisions.assign(kBleuOrder, 0.0);
  out.score = 0.0;
  // No matching n-gram at all scores 0 outright, before any smoothing.
  if (std::all_of(s.correct.begin(), s.correct.end(), [](int64_t c) { return c == 0; })) return out;

  // "exp" smoothing (NIST's): the k-th order with no match gets precision 100 / (2^k * total).
  double smooth = 1.0;
  for (int n = 0; n < kBleuOrder && s.total[n] > 0; ++n) {
    if (s.correct[n] == 0) {
      smooth *= 2.0;
      out.precisions[n] = 100.0 / (smooth * static_cast<double>(s.total[n]));
    } else {
      out.precisions[n] = 100.0 * static_cast<double>(s.correct[n]) / static_cast<double>(s.total[n]);
    }
  }
  // Orders without any hypothesis n-gram keep precision 0, which floored_log turns into a score of 0.
  double log_sum = 0.0;
  for (double p : out.precisions) log_sum += floored_log(p);
  out.score = out.bp * std::exp(log_sum / kBleuOrder);
  return out;
}

// ---- chrF ----

using CharNgrams = std::array<NgramCounts, kChrfOrder>;

CharNgrams char_ngrams(const Text& line) {
  Text chars;
  for (char32_t c : line)
    if (!is_space(c)) chars.push_back(c);
  CharNgrams counts;
  for (size_t n = 1; n <= kChrfOrder; ++n)
    for (size_t i = 0; i + n <= chars.size(); ++i) ++counts[n - 1][chars.substr(i, n)];
  return counts;
}

// Per order: hypothesis n-grams, reference n-grams, matches.
struct ChrfCounts {
  int64_t hyp = 0, ref = 0, match = 0;
};
using ChrfStats = std::array<ChrfCounts, kChrfOrder>;

int64_t total_count(const NgramCounts& counts) {
  int64_t total = 0;
  for (const auto& entry : counts) total += entry.second;
  return total;
}

ChrfStats chrf_segment_stats(const CharNgrams& hyp, const CharNgrams& ref) {
  ChrfStats stats;
  for (int n = 0; n < kChrfOrder; ++n) {
    for (const auto& [ngram, count] : hyp[n]) {
      const auto found = ref[n].find(ngram);
      if (found != ref[n].end()) stats[n].match += std::min(count, found->second);
    }
    // sacreBLEU does not count hypothesis n-grams of an order the reference is too short to have.
    stats[n].hyp = ref[n].empty() ? 0 : total_count(hyp[n]);
    stats[n].ref = total_count(ref[n]);
  }
  return stats;
}

// sacreBLEU >= 2's default ("eff:yes"): precision and recall are averaged over the orders that have
// both hypothesis and reference n-grams, then combined into one F-beta.
double chrf_f_score(const ChrfStats& stats) {
  double avg_prec = 0.0, avg_rec = 0.0;
  int orders = 0;
  for (const ChrfCounts& c : stats) {
    if (c.hyp > 0 && c.ref > 0) {
      avg_prec += static_cast<double>(c.match) / static_cast<double>(c.hyp);
      avg_rec += static_cast<double>(c.match) / static_cast<double>(c.ref);
      ++orders;
    }
  }
  if (orders == 0) return 0.0;
  avg_prec /= orders;
  avg_rec /= orders;
  if (avg_prec + avg_rec == 0.0) return 0.0;
  const double f = (1 + kChrfBetaSquared) * avg_prec * avg_rec / (kChrfBetaSquared * avg_prec + avg_rec);
  return 100 * f;
}

// ---- corpus drivers ----

void check_corpus(const char* metric, const std::vector<std::string>& hyps,
                  const std::vector<std::vector<std::string>>& ref_streams) {
  KILN_CHECK(!hyps.empty(), "[{}] no hypotheses", metric);
  KILN_CHECK(!ref_streams.empty(), "[{}] no references", metric);
  for (const auto& refs : ref_streams)
    KILN_CHECK(refs.size() == hyps.size(), "[{}] {} hypotheses but {} references", metric, hyps.size(), refs.size());
}

std::vector<Text> decode_refs(const char* metric, const std::vector<std::vector<std::string>>& ref_streams,
                              size_t index) {
  std::vector<Text> refs;
  for (const auto& stream : ref_streams) refs.push_back(decode_line(stream[index], metric, "reference", index));
  return refs;
}

}  // namespace

BleuScore corpus_bleu_multi_ref(const std::vector<std::string>& hyps,
                                const std::vector<std::vector<std::string>>& ref_streams) {
  check_corpus("bleu", hyps, ref_streams);
  BleuStats stats;
  for (size_t i = 0; i < hyps.size(); ++i)
    add_segment_stats(decode_line(hyps[i], "bleu", "hypothesis", i), decode_refs("bleu", ref_streams, i), stats);
  return bleu_from_stats(stats, ref_streams.size());
}

ChrfScore corpus_chrf_multi_ref(const std::vector<std::string>& hyps,
                                const std::vector<std::vector<std::string>>& ref_streams) {
  check_corpus("chrf", hyps, ref_streams);
  ChrfStats corpus;
  for (size_t i = 0; i < hyps.size(); ++i) {
    const CharNgrams hyp = char_ngrams(decode_line(hyps[i], "chrf", "hypothesis", i));
    ChrfStats best;
    double best_f = -1.0;  // the first reference wins ties, as in sacreBLEU
    for (const Text& ref : decode_refs("chrf", ref_streams, i)) {
      const ChrfStats stats = chrf_segment_stats(hyp, char_ngrams(ref));
      const double f = chrf_f_score(stats);
      if (f > best_f) {
        best_f = f;
        best = stats;
      }
    }
    for (int n = 0; n < kChrfOrder; ++n) {
      corpus[n].hyp += best[n].hyp;
      corpus[n].ref += best[n].ref;
      corpus[n].match += best[n].match;
    }
  }
  return {chrf_f_score(corpus), fmt::format("nrefs:{}|case:mixed|eff:yes|nc:{}|nw:0|space:no|version:{}",
                                            ref_streams.size(), kChrfOrder, kSacrebleuVersion)};
}

BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return corpus_bleu_multi_ref(hyps, {refs});
}

ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return corpus_chrf_multi_ref(hyps, {refs});
}

}  // namespace kiln
