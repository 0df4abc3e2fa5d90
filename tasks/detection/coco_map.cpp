#include "tasks/detection/coco_map.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace kiln::detection {

namespace {

constexpr int kThresholds = 10;  // IoU 0.50:0.05:0.95
constexpr int kRecallPoints = 101;

double iou(const Box& a, const Box& b) {
  const double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1), h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (w <= 0 || h <= 0) return 0;
  const double inter = w * h;
  const double u =
      static_cast<double>(a.x2 - a.x1) * (a.y2 - a.y1) + static_cast<double>(b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return u > 0 ? inter / u : 0;
}

// np.linspace(0.5, 0.95, 10)[t], as pycocotools' iouThrs.
double threshold(int t) { return 0.5 + t * (0.45 / 9); }

}  // namespace

MapResult coco_map(const std::vector<std::vector<Box>>& truth, const std::vector<std::vector<Box>>& detections,
                   int max_dets) {
  MapResult r;
  // Per class: every kept detection's score and, per threshold, whether it matched.
  struct Scored {
    float score;
    bool tp[kThresholds];
  };
  std::map<int, std::vector<Scored>> by_class;
  std::map<int, int> truth_count;
  const size_t images = std::max(truth.size(), detections.size());
  for (size_t i = 0; i < images; ++i) {
    std::map<int, std::vector<const Box*>> gts, dts;
    if (i < truth.size())
      for (const Box& b : truth[i]) gts[b.class_id].push_back(&b);
    if (i < detections.size())
      for (const Box& b : detections[i]) dts[b.class_id].push_back(&b);
    for (auto& [c, g] : gts) truth_count[c] += static_cast<int>(g.size());
    for (auto& [c, d] : dts) {
      // pycocotools: a stable sort by score, then the first max_dets.
      std::stable_sort(d.begin(), d.end(), [](const Box* a, const Box* b) { return a->score > b->score; });
      if (static_cast<int>(d.size()) > max_dets) d.resize(max_dets);
      const std::vector<const Box*>& g = gts[c];
      std::vector<std::vector<double>> ious(d.size(), std::vector<double>(g.size()));
      for (size_t a = 0; a < d.size(); ++a)
        for (size_t b = 0; b < g.size(); ++b) ious[a][b] = iou(*d[a], *g[b]);
      std::vector<Scored> scored(d.size());
      for (size_t a = 0; a < d.size(); ++a) scored[a].score = d[a]->score;
      for (int t = 0; t < kThresholds; ++t) {
        std::vector<bool> taken(g.size(), false);
        for (size_t a = 0; a < d.size(); ++a) {
          double best = std::min(threshold(t), 1 - 1e-10);
          int match = -1;
          for (size_t b = 0; b < g.size(); ++b) {
            if (taken[b] || ious[a][b] < best) continue;
            best = ious[a][b];
            match = static_cast<int>(b);
          }
          scored[a].tp[t] = match >= 0;
          if (match >= 0) taken[match] = true;
        }
      }
      auto& all = by_class[c];
      all.insert(all.end(), scored.begin(), scored.end());
      r.detections += static_cast<int>(d.size());
    }
  }
  double sum[kThresholds] = {};
  for (const auto& [c, n] : truth_count) {
    r.ground_truth += n;
    ++r.classes;
    auto dets = by_class[c];
    std::stable_sort(dets.begin(), dets.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
    for (int t = 0; t < kThresholds; ++t) {
      std::vector<double> recall(dets.size()), precision(dets.size());
      double tp = 0, fp = 0;
      for (size_t k = 0; k < dets.size(); ++k) {
        (dets[k].tp[t] ? tp : fp) += 1;
        recall[k] = tp / n;
        precision[k] = tp / (tp + fp);
      }
      for (size_t k = dets.size(); k-- > 1;) precision[k - 1] = std::max(precision[k - 1], precision[k]);
      double ap = 0;
      for (int p = 0; p < kRecallPoints; ++p) {
        const double at = p * 0.01;  // np.linspace(0, 1, 101)[p]
        // np.searchsorted(recall, at, side="left"): the first recall >= at.
        const size_t k = std::lower_bound(recall.begin(), recall.end(), at) - recall.begin();
        if (k < precision.size()) ap += precision[k];
      }
      sum[t] += ap / kRecallPoints;
    }
  }
  if (r.classes > 0) {
    r.map50 = sum[0] / r.classes;
    r.map75 = sum[5] / r.classes;
    r.map50_95 = std::accumulate(sum, sum + kThresholds, 0.0) / kThresholds / r.classes;
  }
  return r;
}

}  // namespace kiln::detection
