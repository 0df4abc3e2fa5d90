// Matching two lists of a detector's raw top-k detections (best first). Untrained or random
// weights give many scores equal up to float noise, so ranks may differ between two correct
// implementations: each expected detection must have a found one a few ranks away with its class,
// score and box; only ties with the last score may fall out of the list.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace kiln::test {

struct RawDetection {
  float box[4];
  float score;
  int class_id;
};

struct MatchReport {
  int unmatched = 0;  // expected detections with no counterpart
  int moved = 0;      // matched at another rank (or tied with the last score and left out)
  double max_score_diff = 0, max_box_diff = 0;
};

inline MatchReport match_detections(const std::vector<RawDetection>& want, const std::vector<RawDetection>& got,
                                    double score_tol, double box_tol, int window = 32) {
  MatchReport r;
  std::vector<bool> used(got.size(), false);
  const double last = want.empty() ? 0 : want.back().score;
  for (size_t i = 0; i < want.size(); ++i) {
    int found = -1;
    double found_box = 0;
    const size_t lo = i > static_cast<size_t>(window) ? i - window : 0;
    for (size_t j = lo; j < std::min(got.size(), i + window + 1) && found < 0; ++j) {
      if (used[j] || got[j].class_id != want[i].class_id || std::abs(got[j].score - want[i].score) >= score_tol)
        continue;
      double d = 0;
      for (int k = 0; k < 4; ++k) d = std::max(d, static_cast<double>(std::abs(got[j].box[k] - want[i].box[k])));
      if (d < box_tol) found = static_cast<int>(j), found_box = d;
    }
    if (found < 0) {
      ++(std::abs(want[i].score - last) < 1e-5 ? r.moved : r.unmatched);
      continue;
    }
    used[found] = true;
    r.moved += found != static_cast<int>(i);
    r.max_score_diff = std::max(r.max_score_diff, static_cast<double>(std::abs(got[found].score - want[i].score)));
    r.max_box_diff = std::max(r.max_box_diff, found_box);
  }
  return r;
}

}  // namespace kiln::test
