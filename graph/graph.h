// kiln's graph IR: a topologically ordered list of nodes over values (per-image C x H x W
// activations, batch implicit). Families build it; backends run it; the bundle stores it as JSON.
// Weights are referenced by name and live in the bundle's tensor table.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

enum class Op { Conv2d, GlobalAvgPool, Linear, ScaleChannels, Add };
enum class Activation { None, SiLU, Sigmoid };

const char* op_name(Op op);
const char* activation_name(Activation act);

// Explicit padding, or TensorFlow "same" padding that depends on the input size.
struct Padding {
  bool same = false;
  int top = 0, left = 0, bottom = 0, right = 0;
};

struct Node {
  std::string name;  // the checkpoint module path, e.g. "blocks.1.0.conv_pw"
  Op op = Op::Conv2d;
  std::vector<int> inputs;
  int output = -1;
  // Conv2d: weight [out, k, k, in/groups] (OHWI), bias [out]; Linear: weight [out, in], bias [out].
  std::string weight, bias;
  int kernel = 1, stride = 1, groups = 1;
  Padding pad;
  Activation act = Activation::None;
  // Which group of layers this node belongs to when reporting time (stem, depthwise, ...).
  std::string group;
  // FP8 E4M3 (conv2d only): input_scale > 0: the input, as the fp16 tensor layers exchange, is
  // rounded to E4M3 per tensor at that scale. weight_scale set (only with an FP8 input): the
  // weight is stored as E4M3 values times weight_scale [out] (per output channel).
  std::string weight_scale;
  float input_scale = 0.0f;
  bool fp8_input() const { return input_scale > 0; }
  bool fp8_weights() const { return !weight_scale.empty(); }
};

struct Value {
  int channels = 0;
  std::string name;  // optional: a tap that can be read after a run ("blocks.3", "head_out")
};

struct Dims {
  int c = 0, h = 0, w = 0;
  int64_t size() const { return static_cast<int64_t>(c) * h * w; }
};

// Shape of a weight, looked up while validating a graph.
using WeightShapeFn = std::function<std::optional<std::vector<int64_t>>(const std::string&)>;

class Graph {
 public:
  int add_value(int channels, std::string name = {});
  void set_value_name(int value, std::string name) { values_.at(value).name = std::move(name); }
  void add_node(Node node);
  // Changes a node's attributes (not its inputs or output); used by build-time rewrites.
  void replace_node(int index, Node node);
  void set_input(int value) { input_ = value; }
  void set_output(int value) { output_ = value; }

  int input() const { return input_; }
  int output() const { return output_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Value>& values() const { return values_; }
  std::optional<int> find_value(const std::string& name) const;

  // Per-image dims of every value for an input of h x w; throws if a spatial size collapses.
  std::vector<Dims> infer_dims(int height, int width) const;
  // Resolves "same" padding for one node at a given input size.
  static Padding resolve_padding(const Node& node, int in_h, int in_w);

  nlohmann::json to_json() const;
  // Parses and validates untrusted JSON: ids in range, order, op arguments, weight shapes.
  static Graph from_json(const nlohmann::json& j, const WeightShapeFn& weight_shape);
  void validate(const WeightShapeFn& weight_shape) const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  int input_ = -1, output_ = -1;
};

}  // namespace kiln
