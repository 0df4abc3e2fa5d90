// The CUDA backend's fusion planner: maps graph nodes onto kernels, folding into each kernel
// what it can absorb (the squeeze-excite gate into the next GEMM's loads, bias / activation /
// residual into GEMM epilogues, the SE pool into the depthwise pass, pool + two linears into one
// SE kernel), and lays the weights out for them in one device buffer.
#include <cstring>
#include <set>
#include <span>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/cuda_step.h"
#include "core/error.h"
#include "core/fp8.h"

namespace kiln {

namespace {

cuda::Act to_cuda(Activation a) {
  return a == Activation::SiLU ? cuda::Act::SiLU : a == Activation::Sigmoid ? cuda::Act::Sigmoid : cuda::Act::None;
}

// A 1x1, stride-1 conv without padding ("same" padding is zero there too): one GEMM.
bool is_pointwise(const Node& n) {
  return n.op == Op::Conv2d && n.kernel == 1 && n.stride == 1 && n.groups == 1 &&
         (n.pad.same || (n.pad.top == 0 && n.pad.left == 0 && n.pad.bottom == 0 && n.pad.right == 0));
}

// A conv with groups = input = output channels that the depthwise kernel takes (the graph checks
// that its weight is then [c, k, k, 1]).
bool is_cuda_depthwise(const Node& n, const std::vector<Value>& values) {
  const int c = values[n.inputs[0]].channels;
  return n.op == Op::Conv2d && n.groups == c && c == values[n.output].channels &&
         cuda::depthwise_supported(n.kernel, n.stride, c);
}

// Host staging for the weight blob; each tensor 256-byte aligned.
class Blob {
 public:
  size_t add_half(std::span<const float> v) {
    size_t off = reserve(v.size() * 2);
    auto* p = reinterpret_cast<__half*>(bytes_.data() + off);
    for (size_t i = 0; i < v.size(); ++i) p[i] = __float2half_rn(v[i]);
    return off;
  }
  size_t add_e4m3(std::span<const float> v) {  // values already on the E4M3 grid
    size_t off = reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) bytes_[off + i] = encode_e4m3(v[i]);
    return off;
  }
  size_t add_float(std::span<const float> v) {
    size_t off = reserve(v.size() * 4);
    std::memcpy(bytes_.data() + off, v.data(), v.size() * 4);
    return off;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  size_t reserve(size_t n) {
    size_t off = (bytes_.size() + 255) / 256 * 256;
    bytes_.resize(off + n);
    return off;
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace

// Maps graph nodes onto kernels, fusing what the kernels can absorb.
void CudaEngine::build_steps(const WeightLookup& weights) {
  const auto& nodes = graph_.nodes();
  const auto& values = graph_.values();
  std::vector<std::vector<int>> consumers(values.size());
  std::vector<int> producer(values.size(), -1);
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    for (int in : nodes[i].inputs) consumers[in].push_back(i);
    producer[nodes[i].output] = i;
  }
  std::vector<bool> handled(nodes.size(), false);
  std::set<int> fused_scales;
  Blob blob;
  auto bias_of = [&](const Node& n) { return n.bias.empty() ? kNoBias : blob.add_float(weights(n.bias).data); };
  auto unsupported = [&](const Node& n, const std::string& why) {
    fail("[cuda] {}: {} is not supported by the CUDA backend ({})", n.name, op_name(n.op), why);
  };
  // Values a GEMM stores as E4M3 for their one consumer, an FP8-input depthwise conv.
  std::set<int> e4m3_values;
  auto fp8_depthwise = [&](const Node& c) { return c.fp8_input() && is_cuda_depthwise(c, values); };

  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (handled[i]) continue;
    const Node& n = nodes[i];
    const int in = n.inputs[0];
    const int cin = values[in].channels, cout = values[n.output].channels;
    CudaStep s;
    s.name = n.name;
    s.group = n.group.empty() ? op_name(n.op) : n.group;
    s.node = i;
    s.x = in;
    s.y = n.output;
    s.act = to_cuda(n.act);
    switch (n.op) {
      case Op::Conv2d: {
        WeightView w = weights(n.weight);
        std::vector<float> dequantized;
        if (n.fp8_weights()) {
          if (compute_capability_ < 89) unsupported(n, "FP8 needs compute capability 8.9 or newer");
          if (!is_pointwise(n)) {  // CUDA-core kernels take the weight's values, as the CPU backend
            dequantized = dequantize_per_channel(w, weights(n.weight_scale));
            w.data = dequantized;
          }
        }
        if (in == graph_.input()) {
          if (n.fp8_input()) unsupported(n, "a first conv with an FP8 input");
          if (cout % 8 != 0 || n.groups != 1)
            unsupported(n, "a first conv needs groups 1 and output channels % 8 == 0");
          if (static_cast<int64_t>(n.kernel) * n.kernel * cin * cout * 4 > 48 * 1024)
            unsupported(n, "stem weights over 48 KB");
          s.kind = CudaStep::Stem;
          // [out, k, k, in] -> [k, k, in, out]
          std::vector<float> t(w.data.size());
          const int kk = n.kernel * n.kernel;
          for (int o = 0; o < cout; ++o)
            for (int p = 0; p < kk; ++p)
              for (int c = 0; c < cin; ++c)
                t[(p * cin + c) * cout + o] = w.data[(static_cast<size_t>(o) * kk + p) * cin + c];
          s.w = blob.add_float(t);
          s.b = bias_of(n);
          s.reads = {in};
          s.writes = {n.output};
        } else if (is_pointwise(n)) {
          if (cin % 8 != 0 || cout % 8 != 0) unsupported(n, "pointwise conv channels must be multiples of 8");
          s.kind = CudaStep::Gemm;
          int p = producer[in];
          if (p >= 0 && fused_scales.count(p)) {  // the gate is applied as A is loaded
            s.x = nodes[p].inputs[0];
            s.gate = nodes[p].inputs[1];
          }
          if (consumers[n.output].size() == 1 && nodes[consumers[n.output][0]].op == Op::Add) {
            const Node& add = nodes[consumers[n.output][0]];
            s.residual = add.inputs[0] == n.output ? add.inputs[1] : add.inputs[0];
            s.y = add.output;
            handled[consumers[n.output][0]] = true;
          }
          if (n.fp8_input() && !n.fp8_weights()) unsupported(n, "a pointwise conv with FP8 input but not weights");
          if (n.fp8_weights()) {
            s.fp8 = true;
            s.w = blob.add_e4m3(w.data);
            WeightView ws = weights(n.weight_scale);
            std::vector<float> col(ws.data.begin(), ws.data.end());
            for (float& c : col) c *= n.input_scale;
            s.col_scale = blob.add_float(col);
            s.a_inv_scale = 1.0f / n.input_scale;  // as the CPU backend rounds x * (1 / scale)
          } else {
            s.w = blob.add_half(w.data);
          }
          const auto& cons = consumers[s.y];
          if (s.gate < 0 && s.residual < 0 && s.y != graph_.output() && cons.size() == 1 &&
              fp8_depthwise(nodes[cons[0]])) {
            s.out_e4m3 = true;  // the depthwise conv reads half the bytes
            s.out_inv_scale = 1.0f / nodes[cons[0]].input_scale;
            e4m3_values.insert(s.y);
          }
          s.b = bias_of(n);
          s.reads = {s.x};
          if (s.gate >= 0) s.reads.push_back(s.gate);
          if (s.residual >= 0) s.reads.push_back(s.residual);
          s.writes = {s.y};
        } else if (is_cuda_depthwise(n, values)) {
          s.kind = CudaStep::Depthwise;
          if (n.fp8_input()) {
            s.x_mode = e4m3_values.count(in) ? cuda::DepthwiseInput::E4M3 : cuda::DepthwiseInput::F16ToE4M3;
            s.x_scale = n.input_scale;
            s.x_inv_scale = 1.0f / n.input_scale;  // as the CPU backend rounds x * (1 / scale)
          }
        } else {
          unsupported(n, fmt::format("kernel {}, stride {}, groups {}", n.kernel, n.stride, n.groups));
        }
        if (s.kind == CudaStep::Depthwise) {
          std::vector<float> t(w.data.size());  // [c, k, k, 1] -> [k, k, c]
          const int kk = n.kernel * n.kernel;
          for (int c = 0; c < cin; ++c)
            for (int p = 0; p < kk; ++p) t[static_cast<size_t>(p) * cin + c] = w.data[static_cast<size_t>(c) * kk + p];
          s.w = blob.add_half(t);
          s.b = bias_of(n);
          s.reads = {in};
          s.writes = {n.output};
          steps_.push_back(s);
          // Squeeze-excite: pool -> linear -> linear over this output becomes one MLP kernel fed
          // by sums the depthwise kernel accumulates.
          for (int c : consumers[n.output]) {
            if (nodes[c].op != Op::GlobalAvgPool || consumers[nodes[c].output].size() != 1) continue;
            const Node& l1 = nodes[consumers[nodes[c].output][0]];
            if (l1.op != Op::Linear || consumers[l1.output].size() != 1) continue;
            const Node& l2 = nodes[consumers[l1.output][0]];
            if (l2.op != Op::Linear || values[l2.output].channels != cin) continue;
            CudaStep se;
            se.kind = CudaStep::SqueezeExcite;
            se.name = l1.name.substr(0, l1.name.rfind('.'));
            se.group = l1.group.empty() ? "squeeze_excite" : l1.group;
            se.node = consumers[nodes[c].output][0];
            se.rd = values[l1.output].channels;
            se.act = to_cuda(l1.act);
            se.act2 = to_cuda(l2.act);
            se.w = blob.add_float(weights(l1.weight).data);
            se.b = bias_of(l1);
            WeightView w2 = weights(l2.weight);  // [c, rd] -> [rd, c]
            std::vector<float> w2t(w2.data.size());
            for (int c2 = 0; c2 < cin; ++c2)
              for (int j = 0; j < se.rd; ++j)
                w2t[static_cast<size_t>(j) * cin + c2] = w2.data[static_cast<size_t>(c2) * se.rd + j];
            se.w2 = blob.add_float(w2t);
            se.b2 = bias_of(l2);
            KILN_CHECK(se.b != kNoBias && se.b2 != kNoBias, "[cuda] {}: squeeze-excite layers need biases", se.name);
            se.y = l2.output;
            se.other = n.output;  // the pooled map, for its pixel count
            se.writes = {l2.output};
            se.pool_slot = static_cast<int>(pool_offsets_.size());
            pool_offsets_.push_back(pool_floats_per_image_);
            pool_floats_per_image_ += cin;
            steps_.back().pool_slot = se.pool_slot;
            handled[c] = handled[se.node] = handled[consumers[l1.output][0]] = true;
            steps_.push_back(se);
            break;
          }
          continue;
        }
        break;
      }
      case Op::ScaleChannels: {
        const auto& cons = consumers[n.output];
        if (cons.size() == 1 && is_pointwise(nodes[cons[0]]) && cin % 8 == 0) {
          fused_scales.insert(i);  // applied by the consuming GEMM
          continue;
        }
        s.kind = CudaStep::Scale;
        s.gate = n.inputs[1];
        s.reads = {in, s.gate};
        s.writes = {n.output};
        break;
      }
      case Op::Add:
        s.kind = CudaStep::Add;
        s.other = n.inputs[1];
        s.reads = {in, s.other};
        s.writes = {n.output};
        break;
      case Op::GlobalAvgPool:
        s.kind = CudaStep::Pool;
        s.reads = {in};
        s.writes = {n.output};
        break;
      case Op::Linear: {
        WeightView w = weights(n.weight);
        if (cin % 8 == 0 && cout % 8 == 0) {
          s.kind = CudaStep::Gemm;
          s.w = blob.add_half(w.data);
        } else {
          s.kind = CudaStep::LinearNaive;
          s.w = blob.add_float(w.data);
        }
        s.b = bias_of(n);
        s.reads = {in};
        s.writes = {n.output};
        break;
      }
    }
    steps_.push_back(s);
  }
  // The output is fp32: the last GEMM or linear writes it directly, anything else is converted.
  CudaStep& last = steps_.back();
  if (last.y == graph_.output() &&
      (last.kind == CudaStep::LinearNaive || (last.kind == CudaStep::Gemm && last.gate < 0 && last.residual < 0))) {
    last.to_output = true;
    last.writes.clear();
  } else {
    CudaStep c;
    c.kind = CudaStep::ToFloat;
    c.name = "output";
    c.group = "head";
    c.x = graph_.output();
    c.reads = {graph_.output()};
    c.to_output = true;
    steps_.push_back(c);
  }
  KILN_CUDA_CHECK(cudaMalloc(&weights_, std::max<size_t>(blob.bytes().size(), 256)));
  KILN_CUDA_CHECK(cudaMemcpy(weights_, blob.bytes().data(), blob.bytes().size(), cudaMemcpyHostToDevice));
}

}  // namespace kiln
