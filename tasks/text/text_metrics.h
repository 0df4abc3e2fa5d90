// Corpus BLEU and chrF for translation outputs, computed exactly as sacreBLEU 2.x does with its
// default settings, so that kiln's numbers can be compared with published ones:
//   BLEU: 13a tokenization (mteval-v13a), mixed case, "exp" smoothing, 4-grams, no effective order;
//   chrF: character 6-grams, no word n-grams, beta 2, whitespace removed, effective-order averaging.
// Scores are on sacreBLEU's 0-100 scale. Inputs are UTF-8 lines; invalid UTF-8 is a kiln::Error.
// Signatures name sacreBLEU 2.4.3 ("version:2.4.3"), the last 2.4.x release, whose rules these are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct BleuScore {
  double score;                    // 0-100
  std::vector<double> precisions;  // n-gram precisions (0-100), n = 1..4, smoothed where a count is 0
  double bp, sys_len_ratio;        // brevity penalty; hypothesis length / reference length
  int64_t sys_len, ref_len;        // tokens after 13a tokenization, summed over the corpus
  std::string signature;           // sacreBLEU's reproducibility signature for these settings
};

struct ChrfScore {
  double score;  // 0-100
  std::string signature;
};

// One reference per hypothesis; the sizes must match and the corpus must not be empty.
BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs);
ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::string>& refs);

// Several references per hypothesis, given as sacreBLEU takes them: ref_streams[k][i] is the k-th
// reference of hypothesis i. BLEU clips n-gram counts by the largest count in any reference and
// takes the reference length closest to the hypothesis (the shorter on a tie); chrF keeps, per
// sentence, the reference with the best sentence-level score. (Separate names, because a braced
// list of strings would convert to either argument type.)
BleuScore corpus_bleu_multi_ref(const std::vector<std::string>& hyps,
                                const std::vector<std::vector<std::string>>& ref_streams);
ChrfScore corpus_chrf_multi_ref(const std::vector<std::string>& hyps,
                                const std::vector<std::vector<std::string>>& ref_streams);

}  // namespace kiln
