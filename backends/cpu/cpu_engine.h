// The CPU backend: runs a graph in fp32, NHWC, with one activation arena planned per input
// size. It is the reference every other backend is checked against, and a usable engine.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"

namespace kiln {

class CpuEngine : public Engine {
 public:
  CpuEngine(const Graph& graph, const WeightLookup& weights);

  std::string device() const override { return "cpu"; }
  void run(const float* input, int batch, int height, int width, float* output) override;
  // Also returns the named values in `taps` (NCHW), e.g. "blocks.3".
  std::map<std::string, Tensor> run_with_taps(const float* input, int batch, int height, int width, float* output,
                                              const std::vector<std::string>& taps);
  int output_elements(int height, int width) const override;
  int input_channels() const override { return graph_.values()[graph_.input()].channels; }
  int64_t activation_bytes() const override { return plan_.arena_elements * 4; }

  // Called before each node runs with its first input (NHWC, batch x H x W x C floats):
  // calibration collects activation statistics through it.
  using Observer = std::function<void(int node, const float* input, int64_t count)>;
  void set_observer(Observer observer) { observer_ = std::move(observer); }

 private:
  struct Layer {
    enum Kind { Pointwise, Depthwise, Direct, Pool, Linear, Scale, Add } kind;
    std::vector<float> weight, bias;
  };
  void prepare(int batch, int height, int width, const std::set<int>& keep);
  void execute(int batch, float* output);  // the input is already in the arena

  Graph graph_;
  std::vector<Layer> layers_;
  MemoryPlan plan_;
  std::vector<float> arena_;
  int planned_batch_ = -1, planned_h_ = -1, planned_w_ = -1;
  std::set<int> planned_keep_;
  Observer observer_;
  std::vector<float> fp8_input_;  // an FP8 layer's input after quantisation
};

}  // namespace kiln
