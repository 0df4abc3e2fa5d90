// The YOLOv10 graph from an ArchSpec and a Hub checkpoint (THU-MIG's layout: the wrapper's state
// dict, "model.model.<layer>...."), batch norm folded into the convs and RepVGGDW's two depthwise
// convs merged into one, as Ultralytics' fuse() does. Only the one-to-one head runs (the
// one-to-many head trains the model and is not read).
//
// Inputs: pixels [batch, 3, height, width] (RGB in [0, 1]; height and width multiples of 32) and
// anchors [anchors, 3]: each grid cell's centre (x, y, in cells) and stride, level by level in
// row-major order, as Ultralytics' make_anchors; the detection task computes them per size.
// Outputs, the head's top `max_det` (anchor, class) pairs best first, as v10postprocess picks them:
// boxes [batch, max_det, 4] (x1 y1 x2 y2 in input pixels), scores [batch, max_det] (sigmoid) and
// classes [batch, max_det] (i64).
#pragma once

#include "checkpoints/checkpoint.h"
#include "families/yolov10/arch.h"
#include "graph/model_definition.h"

namespace kiln::yolov10 {

void build_graph(const ArchSpec& arch, int num_classes, int max_det, Checkpoint& ckpt, ModelDefinition& def);

}  // namespace kiln::yolov10
