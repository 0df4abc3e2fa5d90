// Detection mAP as pycocotools' COCOeval computes it for bounding boxes: per image and class,
// detections sorted by score (the best max_dets kept), each matched greedily to the unmatched
// ground-truth box of highest IoU >= t, for t = 0.50, 0.55, ..., 0.95; per class, precision over
// all images made monotone and read at 101 recall points; AP averaged over the classes that have
// ground truth. IoU of x1 y1 x2 y2 boxes without COCO's old +1.
#pragma once

#include <vector>

namespace kiln::detection {

struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int class_id = 0;
  float score = 0;  // detections only
};

struct MapResult {
  double map50_95 = 0, map50 = 0, map75 = 0;
  int classes = 0;  // with ground truth
  int ground_truth = 0, detections = 0;
};

// truth[i] and detections[i]: the boxes of image i.
MapResult coco_map(const std::vector<std::vector<Box>>& truth, const std::vector<std::vector<Box>>& detections,
                   int max_dets = 100);

}  // namespace kiln::detection
