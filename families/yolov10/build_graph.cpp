#include "families/yolov10/build_graph.h"

#include <cmath>

#include "checkpoints/convert.h"
#include "core/error.h"
#include "graph/builder.h"

namespace kiln::yolov10 {

namespace {

std::string str(int i) { return std::to_string(i); }

class Builder {
 public:
  Builder(const ArchSpec& arch, Checkpoint& ckpt, ModelDefinition& def) : arch_(arch), ckpt_(ckpt), b_(def) {}

  void build(int num_classes, int max_det);

 private:
  Tensor load(const std::string& name, const std::vector<int64_t>& shape) {
    KILN_CHECK(ckpt_.has(name), "[yolov10] checkpoint {} is missing tensor '{}'", ckpt_.dir(), name);
    const auto actual = ckpt_.shape(name);
    KILN_CHECK(actual == shape, "[yolov10] tensor '{}' has shape {}, {} needs {}", name, shape_string(actual),
               arch_.name, shape_string(shape));
    return ckpt_.load(name);
  }

  // Ultralytics' Conv (conv without bias + BatchNorm2d) as an OHWI weight and the folded bias.
  void conv_bn_weights(const std::string& m, int in, int out, int k, int groups, Tensor& w, Tensor& b) {
    w = oihw_to_ohwi(load(m + ".conv.weight", {out, in / groups, k, k}));
    if (ckpt_.has(m + ".bn.num_batches_tracked")) ckpt_.ignore(m + ".bn.num_batches_tracked");
    b = fold_batch_norm(w, load(m + ".bn.weight", {out}), load(m + ".bn.bias", {out}),
                        load(m + ".bn.running_mean", {out}), load(m + ".bn.running_var", {out}), arch_.bn_eps);
  }

  int conv(int x, const std::string& m, int in, int out, int k, int stride, int groups, Activation act,
           const std::string& group) {
    Tensor w, b;
    conv_bn_weights(m, in, out, k, groups, w, b);
    return conv_with(x, m, std::move(w), std::move(b), k, stride, groups, act, group);
  }

  int conv_with(int x, const std::string& name, Tensor w, Tensor b, int k, int stride, int groups, Activation act,
                const std::string& group) {
    ConvOptions o;
    o.stride = stride;
    o.groups = groups;
    o.pad = k / 2;  // Ultralytics' autopad
    o.act = act;
    o.group = group;
    return b_.conv2d(x, name, std::move(w), std::move(b), o);
  }

  // A plain nn.Conv2d 1x1 with bias (the head's last layers).
  int conv_bias(int x, const std::string& m, int in, int out, const std::string& group) {
    Tensor w = oihw_to_ohwi(load(m + ".weight", {out, in, 1, 1}));
    Tensor b = load(m + ".bias", {out});
    return conv_with(x, m, std::move(w), std::move(b), 1, 1, 1, Activation::None, group);
  }

  // RepVGGDW: SiLU(dw7x7(x) + dw3x3(x)), merged into one 7x7 depthwise conv (the 3x3 kernel
  // added to the 7x7's centre, the biases summed), as its fuse() does.
  int rep_vgg_dw(int x, const std::string& m, int c, const std::string& group) {
    Tensor w7, b7, w3, b3;
    conv_bn_weights(m + ".conv", c, c, 7, c, w7, b7);
    conv_bn_weights(m + ".conv1", c, c, 3, c, w3, b3);
    for (int o = 0; o < c; ++o) {
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          w7.data[(static_cast<size_t>(o) * 7 + i + 2) * 7 + j + 2] += w3.data[(o * 3 + i) * 3 + j];
      b7.data[o] += b3.data[o];
    }
    return conv_with(x, m, std::move(w7), std::move(b7), 7, 1, c, Activation::SiLU, group);
  }

  int add(int a, int b, const std::string& name, const std::string& group) {
    return b_.op("add", name, {a, b}, {}, group);
  }

  // A node of several outputs (split, topk): their values in order.
  std::vector<int> outputs_of(const std::string& op, const std::string& name, std::vector<int> in, Attrs attrs,
                              const std::string& group) {
    return b_.graph().add_node(op, name, std::move(in), std::move(attrs), group);
  }

  std::vector<int> split(int x, int axis, std::vector<int64_t> sizes, const std::string& name,
                         const std::string& group) {
    return outputs_of("split", name, {x}, {{"axis", int64_t{axis}}, {"sizes", std::move(sizes)}}, group);
  }

  int concat(std::vector<int> xs, const std::string& name, const std::string& group) {
    return b_.op("concat", name, std::move(xs), {{"axis", int64_t{3}}}, group);
  }

  // C2f / C2fCIB: cv1 to 2c channels, split in two halves, each bottleneck extends the list from
  // its last element, cv2 over the concatenation.
  int c2f(int x, const std::string& m, const LayerSpec& l) {
    const int c = l.out_ch / 2;
    const std::string group = l.module == Module::C2fCIB ? "c2f_cib" : "c2f";
    const int y = conv(x, m + ".cv1", l.in_ch, 2 * c, 1, 1, 1, Activation::SiLU, group);
    std::vector<int> parts = split(y, 3, {c, c}, m + ".chunk", group);
    for (int j = 0; j < l.repeats; ++j) {
      const std::string p = m + ".m." + str(j);
      const int in = parts.back();
      int t;
      if (l.module == Module::C2f) {
        t = conv(in, p + ".cv1", c, c, 3, 1, 1, Activation::SiLU, group);
        t = conv(t, p + ".cv2", c, c, 3, 1, 1, Activation::SiLU, group);
      } else {
        t = conv(in, p + ".cv1.0", c, c, 3, 1, c, Activation::SiLU, group);
        t = conv(t, p + ".cv1.1", c, 2 * c, 1, 1, 1, Activation::SiLU, group);
        t = l.large_kernel ? rep_vgg_dw(t, p + ".cv1.2", 2 * c, group)
                           : conv(t, p + ".cv1.2", 2 * c, 2 * c, 3, 1, 2 * c, Activation::SiLU, group);
        t = conv(t, p + ".cv1.3", 2 * c, c, 1, 1, 1, Activation::SiLU, group);
        t = conv(t, p + ".cv1.4", c, c, 3, 1, c, Activation::SiLU, group);
      }
      parts.push_back(l.shortcut ? add(in, t, p + ".add", group) : t);
    }
    return conv(concat(parts, m + ".cat", group), m + ".cv2", (2 + l.repeats) * c, l.out_ch, 1, 1, 1, Activation::SiLU,
                group);
  }

  int sppf(int x, const std::string& m, const LayerSpec& l) {
    const int c = l.in_ch / 2, pad = l.kernel / 2;
    int y = conv(x, m + ".cv1", l.in_ch, c, 1, 1, 1, Activation::SiLU, "sppf");
    std::vector<int> parts = {y};
    for (int i = 0; i < 3; ++i)
      parts.push_back(b_.op("max_pool", m + ".m." + str(i), {parts.back()},
                            {{"kernel", std::vector<int64_t>{l.kernel, l.kernel}},
                             {"stride", std::vector<int64_t>{1, 1}},
                             {"pad", std::vector<int64_t>{pad, pad, pad, pad}}},
                            "sppf"));
    return conv(concat(parts, m + ".cat", "sppf"), m + ".cv2", 4 * c, l.out_ch, 1, 1, 1, Activation::SiLU, "sppf");
  }

  // PSA: cv1 to two halves a, b; b += Attention(b); b += FFN(b); cv2(cat(a, b)). Attention has
  // c / 64 heads (rounded down) of c / heads values (64, or 72 in yolov10m) with queries and keys
  // half as wide; the qkv conv's channels are, head by head, [q | k | v]; the values, back as a
  // map, also go through a 3x3 depthwise conv ("pe") added to the attention's output.
  int psa(int x, const std::string& m, const LayerSpec& l) {
    const std::string group = "psa";
    const int c = l.in_ch / 2, heads = c / 64;
    KILN_CHECK(heads >= 1 && c % heads == 0 && l.out_ch == l.in_ch, "[yolov10] {}: PSA of {} channels", m, l.in_ch);
    const int head_dim = c / heads, key_dim = head_dim / 2;
    const int y = conv(x, m + ".cv1", l.in_ch, 2 * c, 1, 1, 1, Activation::SiLU, group);
    const auto halves = split(y, 3, {c, c}, m + ".chunk", group);
    const int a = halves[0], bv = halves[1];
    const std::string at = m + ".attn";
    const int per_head = 2 * key_dim + head_dim;
    int qkv = conv(bv, at + ".qkv", c, heads * per_head, 1, 1, 1, Activation::None, group);
    qkv = b_.op("reshape", at + ".heads", {qkv}, {{"shape", std::vector<int64_t>{0, -1, heads, per_head}}}, group);
    qkv = b_.op("transpose", at + ".heads_first", {qkv}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, group);
    const auto qkv_parts = split(qkv, 3, {key_dim, key_dim, head_dim}, at + ".qkv_split", group);
    const int q = qkv_parts[0], k = qkv_parts[1], v = qkv_parts[2];
    // softmax(q k^T / sqrt(key_dim)) v: the attention op's default scale.
    int o = b_.op("attention", at + ".sdpa", {q, k, v}, {}, group);
    auto as_map = [&](int t, const std::string& name) {
      t = b_.op("transpose", name + ".tokens_first", {t}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, group);
      return b_.op("reshape", name, {t, bv}, {{"shape", std::vector<int64_t>{0, 0, 0, -1}}}, group);
    };
    o = as_map(o, at + ".out_map");
    const int pe = conv(as_map(v, at + ".v_map"), at + ".pe", c, c, 3, 1, c, Activation::None, group);
    o = conv(add(o, pe, at + ".pe_add", group), at + ".proj", c, c, 1, 1, 1, Activation::None, group);
    int b = add(bv, o, m + ".attn_residual", group);
    int f = conv(b, m + ".ffn.0", c, 2 * c, 1, 1, 1, Activation::SiLU, group);
    f = conv(f, m + ".ffn.1", 2 * c, c, 1, 1, 1, Activation::None, group);
    b = add(b, f, m + ".ffn_residual", group);
    return conv(concat({a, b}, m + ".cat", group), m + ".cv2", 2 * c, l.out_ch, 1, 1, 1, Activation::SiLU, group);
  }

  // One level of the one-to-one head: box logits [B, h * w, 4 * reg_max] and class logits
  // [B, h * w, classes].
  std::pair<int, int> head_level(int x, const std::string& m, int level, int ch, int num_classes) {
    const std::string i = str(level), group = "head";
    const int c2 = box_channels(arch_), c3 = class_channels(arch_, num_classes), bins = 4 * arch_.reg_max;
    const std::string bp = m + ".one2one_cv2." + i;
    int box = conv(x, bp + ".0", ch, c2, 3, 1, 1, Activation::SiLU, group);
    box = conv(box, bp + ".1", c2, c2, 3, 1, 1, Activation::SiLU, group);
    box = conv_bias(box, bp + ".2", c2, bins, group);
    const std::string cp = m + ".one2one_cv3." + i;
    int cls = conv(x, cp + ".0.0", ch, ch, 3, 1, ch, Activation::SiLU, group);
    cls = conv(cls, cp + ".0.1", ch, c3, 1, 1, 1, Activation::SiLU, group);
    cls = conv(cls, cp + ".1.0", c3, c3, 3, 1, c3, Activation::SiLU, group);
    cls = conv(cls, cp + ".1.1", c3, c3, 1, 1, 1, Activation::SiLU, group);
    cls = conv_bias(cls, cp + ".2", c3, num_classes, group);
    auto rows = [&](int t, int width, const std::string& name) {
      return b_.op("reshape", name, {t}, {{"shape", std::vector<int64_t>{0, -1, width}}}, group);
    };
    return {rows(box, bins, bp + ".rows"), rows(cls, num_classes, cp + ".rows")};
  }

  // The one-to-one head and v10postprocess: the top max_det anchors by their best class score,
  // then the top max_det (anchor, class) scores among those; the chosen anchors' boxes decoded
  // from their DFL distributions (softmax over reg_max bins, expectation) around the anchor.
  void detect(const std::vector<int>& feats, const std::string& m, int num_classes, int max_det, int anchors) {
    const std::string group = "head";
    std::vector<int> box_rows, cls_rows;
    for (size_t lvl = 0; lvl < feats.size(); ++lvl) {
      auto [box, cls] = head_level(feats[lvl], m, static_cast<int>(lvl), arch_.detect_ch[lvl], num_classes);
      box_rows.push_back(box);
      cls_rows.push_back(cls);
    }
    const int box = b_.op("concat", m + ".box_logits", box_rows, {{"axis", int64_t{1}}}, group);
    const int cls = b_.op("concat", m + ".class_logits", cls_rows, {{"axis", int64_t{1}}}, group);
    const int scores = b_.op("sigmoid", m + ".scores", {cls}, {}, group);
    const int best =
        b_.op("reduce", m + ".best_class", {scores},
              {{"op", std::string("max")}, {"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t{0}}}, group);
    const int top_anchor =
        outputs_of("topk", m + ".top_anchors", {best}, {{"k", int64_t{max_det}}}, group)[1];  // [B, K]
    auto pick = [&](int rows, int idx, const std::string& name) {
      return b_.op("gather", name, {rows, idx}, {{"axis", int64_t{1}}, {"batch_dims", int64_t{1}}}, group);
    };
    const int cand = b_.op("reshape", m + ".candidate_scores", {pick(scores, top_anchor, m + ".top_anchor_scores")},
                           {{"shape", std::vector<int64_t>{0, -1}}}, group);  // [B, K * classes]
    const auto final_top = outputs_of("topk", m + ".top_pairs", {cand}, {{"k", int64_t{max_det}}}, group);
    b_.output("scores", final_top[0]);
    const int pair = final_top[1];
    const int nc = b_.weight(m + ".num_classes", scalar(num_classes), DType::I64);
    const int slot = b_.op("div", m + ".pair_anchor_slot", {pair, nc}, {}, group);  // which of the K anchors
    const int cls_of_pair =
        b_.op("sub", m + ".pair_class", {pair, b_.op("mul", m + ".pair_slot_start", {slot, nc}, {}, group)}, {}, group);
    b_.output("classes", cls_of_pair);
    const int anchor = pick(top_anchor, slot, m + ".pair_anchor");  // [B, K] anchor indices

    // DFL on the chosen anchors only: [B, K, 4, reg_max] -> softmax -> . [0, 1, ..., reg_max-1].
    Tensor dfl = load(m + ".dfl.conv.weight", {1, arch_.reg_max, 1, 1});
    for (int i = 0; i < arch_.reg_max; ++i)
      KILN_CHECK(dfl.data[i] == static_cast<float>(i), "[yolov10] {}.dfl.conv.weight is not 0, 1, ..., {}", m,
                 arch_.reg_max - 1);
    dfl.shape = {1, arch_.reg_max};
    int dist = b_.op("reshape", m + ".dfl.bins", {pick(box, anchor, m + ".pair_box_logits")},
                     {{"shape", std::vector<int64_t>{0, 0, 4, arch_.reg_max}}}, group);
    dist = b_.op("softmax", m + ".dfl.softmax", {dist}, {}, group);
    dist = b_.linear(dist, m + ".dfl.conv", std::move(dfl), Tensor(), Activation::None, group);  // [B, K, 4, 1]
    dist = b_.op("reshape", m + ".dfl.distances", {dist}, {{"shape", std::vector<int64_t>{0, 0, 4}}}, group);
    const auto sides = split(dist, 2, {2, 2}, m + ".ltrb", group);
    // The anchors input: [A, 3] = (x, y, stride); gathered per pair: [B, K, 3].
    const int grid = b_.op("gather", m + ".pair_anchors", {anchors, anchor}, {{"axis", int64_t{0}}}, group);
    const auto cell = split(grid, 2, {2, 1}, m + ".anchor_parts", group);
    const int centre = cell[0], stride = cell[1];
    const int x1y1 = b_.op("sub", m + ".x1y1", {centre, sides[0]}, {}, group);
    const int x2y2 = b_.op("add", m + ".x2y2", {centre, sides[1]}, {}, group);
    const int cells = b_.op("concat", m + ".box_cells", {x1y1, x2y2}, {{"axis", int64_t{2}}}, group);
    b_.output("boxes", b_.op("mul", m + ".boxes", {cells, stride}, {}, group));
  }

  static Tensor scalar(float v) {
    Tensor t({1});
    t.data[0] = v;
    return t;
  }

  const ArchSpec& arch_;
  Checkpoint& ckpt_;
  GraphBuilder b_;
};

void Builder::build(int num_classes, int max_det) {
  Graph& g = b_.graph();
  g.set_symbol("batch", {1, 4096});
  // Five stride-2 levels: the input's sides are multiples of 32 (the letterbox pads to them).
  g.set_symbol("height", {640, 8192, 32});
  g.set_symbol("width", {640, 8192, 32});
  g.set_symbol("anchors", {8400, 1 << 22});
  int x = b_.input("pixels", DType::F32, {{0, "batch"}, {3, ""}, {0, "height"}, {0, "width"}});
  const int anchors = b_.input("anchors", DType::F32, {{0, "anchors"}, {3, ""}});
  x = b_.op("transpose", "pixels_nhwc", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, "stem");
  std::vector<int> outs;  // each layer's output
  for (size_t i = 0; i < arch_.layers.size(); ++i) {
    const LayerSpec& l = arch_.layers[i];
    const std::string m = "model.model." + str(static_cast<int>(i));
    auto from = [&](int f) { return f < 0 ? outs.back() : outs.at(f); };
    const int in = outs.empty() ? x : from(l.from[0]);
    int y = -1;
    switch (l.module) {
      case Module::Conv:
        y = conv(in, m, l.in_ch, l.out_ch, l.kernel, l.stride, 1, Activation::SiLU, "conv");
        break;
      case Module::SCDown:
        y = conv(in, m + ".cv1", l.in_ch, l.out_ch, 1, 1, 1, Activation::SiLU, "scdown");
        y = conv(y, m + ".cv2", l.out_ch, l.out_ch, l.kernel, l.stride, l.out_ch, Activation::None, "scdown");
        break;
      case Module::C2f:
      case Module::C2fCIB:
        y = c2f(in, m, l);
        break;
      case Module::SPPF:
        y = sppf(in, m, l);
        break;
      case Module::PSA:
        y = psa(in, m, l);
        break;
      case Module::Upsample:
        y = b_.op("upsample_nearest", m, {in}, {{"scale", std::vector<int64_t>{l.stride, l.stride}}}, "neck");
        break;
      case Module::Concat: {
        std::vector<int> xs;
        for (int f : l.from) xs.push_back(from(f));
        y = concat(xs, m, "neck");
        break;
      }
      case Module::Detect: {
        std::vector<int> feats;
        for (int f : l.from) feats.push_back(from(f));
        for (const char* head : {"cv2", "cv3"})  // the one-to-many head: training only
          for (const auto& name : ckpt_.names())
            if (name.starts_with(m + "." + head + ".")) ckpt_.ignore(name);
        detect(feats, m, num_classes, max_det, anchors);
        break;
      }
    }
    if (y >= 0) b_.name_value(y, m);
    outs.push_back(y);
  }
}

}  // namespace

void build_graph(const ArchSpec& arch, int num_classes, int max_det, Checkpoint& ckpt, ModelDefinition& def) {
  KILN_CHECK(num_classes >= 1 && num_classes <= 100000, "[yolov10] bad number of classes {}", num_classes);
  KILN_CHECK(max_det >= 1 && max_det <= 10000, "[yolov10] bad max_det {}", max_det);
  Builder(arch, ckpt, def).build(num_classes, max_det);
  def.validate();
}

}  // namespace kiln::yolov10
