#include "backends/cuda/cuda_engine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_step.h"
#include "backends/cuda/kernels.cuh"
#include "core/error.h"

namespace kiln {

namespace {

constexpr size_t kWorkspaceBytes = 16u << 20;  // split-K partial sums; variants that need more are skipped

// Whether this GEMM can run tile variant v: the kernel takes its inputs and outputs, and its
// split-K partial sums fit the workspace.
bool variant_runs(const cuda::GemmArgs& a, int v) {
  return cuda::gemm_variant_supports(a, v) && cuda::gemm_workspace_bytes(a, v) <= kWorkspaceBytes;
}

// The fields the stem and depthwise kernels share: sizes, kernel, stride, resolved padding.
template <typename ConvArgs>
void set_conv_geometry(ConvArgs& a, int batch, const Dims& x, const Dims& y, const Node& n, cuda::Act act) {
  const Padding p = Graph::resolve_padding(n, x.h, x.w);
  a.batch = batch;
  a.h = x.h;
  a.w_in = x.w;
  a.oh = y.h;
  a.ow = y.w;
  a.kernel = n.kernel;
  a.stride = n.stride;
  a.pad_top = p.top;
  a.pad_left = p.left;
  a.act = act;
}

}  // namespace

bool cuda_backend_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::unique_ptr<Engine> make_cuda_engine(const Graph& graph, const WeightLookup& weights, const nlohmann::json& plan) {
  return std::make_unique<CudaEngine>(graph, weights, plan);
}

CudaEngine::CudaEngine(const Graph& graph, const WeightLookup& weights, const nlohmann::json& plan) : graph_(graph) {
  KILN_CHECK(cuda_backend_available(), "[cuda] no CUDA device");
  KILN_CUDA_CHECK(cudaGetDevice(&device_));
  cudaDeviceProp prop{};
  KILN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  device_name_ = prop.name;
  compute_capability_ = prop.major * 10 + prop.minor;
  KILN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  build_steps(weights);
  KILN_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
  if (!plan.is_object()) return;
  // Saved GEMM choices are used only on the GPU model they were timed on.
  std::string planned_on = plan.value("device", std::string());
  if (planned_on != device_name_) {
    std::fprintf(stderr, "kiln: the bundle was planned on %s; re-planning for %s\n", planned_on.c_str(),
                 device_name_.c_str());
    return;
  }
  const nlohmann::json batches = plan.value("batches", nlohmann::json::object());  // items() needs a named object
  for (auto& [batch, entry] : batches.items()) {
    auto names = entry.value("gemm", std::vector<std::string>());
    std::vector<int> variants(steps_.size(), -1);
    size_t g = 0;
    bool ok = true;
    for (size_t i = 0; i < steps_.size() && ok; ++i) {
      if (steps_[i].kind != CudaStep::Gemm) continue;
      ok = g < names.size();
      for (int v = 0; ok && v < cuda::kGemmVariants; ++v)
        if (names[g] == cuda::gemm_variant_name(v)) variants[i] = v;
      ok = ok && variants[i] >= 0;
      ++g;
    }
    if (ok && g == names.size()) saved_variants_[std::stoi(batch)] = variants;
  }
}

nlohmann::json CudaEngine::export_plan() const {
  nlohmann::json batches = nlohmann::json::object();
  for (const auto& [batch, p] : plans_) {
    std::vector<std::string> gemm;
    for (size_t i = 0; i < steps_.size(); ++i)
      if (steps_[i].kind == CudaStep::Gemm) gemm.push_back(cuda::gemm_variant_name(p.variants[i]));
    batches[std::to_string(batch)] = {{"gemm", gemm}};
  }
  return {{"device", device_name_}, {"batches", batches}};
}

CudaEngine::~CudaEngine() {
  drop_graphs();
  cudaFree(weights_);
  cudaFree(workspace_);
  cudaFree(arena_);
  cudaFree(input_);
  cudaFree(output_);
  cudaFree(pool_);
  if (stream_) cudaStreamDestroy(stream_);
}

std::string CudaEngine::device() const { return fmt::format("cuda:{} ({})", device_, device_name_); }

int CudaEngine::output_elements(int height, int width) const {
  return static_cast<int>(graph_.infer_dims(height, width)[graph_.output()].size());
}

int64_t CudaEngine::activation_bytes() const {
  int64_t m = 0;
  for (const auto& [b, p] : plans_) m = std::max(m, p.memory.arena_elements * 2);
  return m;
}

void CudaEngine::drop_graphs() {
  for (auto& [b, p] : plans_)
    if (p.graph) {
      cudaGraphExecDestroy(p.graph);
      p.graph = nullptr;
    }
}

void CudaEngine::ensure_capacity(int64_t arena_halves, int batch) {
  if (arena_halves <= arena_capacity_ && batch <= capacity_batch_) return;
  drop_graphs();  // captured graphs hold the old pointers
  KILN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (arena_halves > arena_capacity_) {
    cudaFree(arena_);
    KILN_CUDA_CHECK(cudaMalloc(&arena_, std::max<int64_t>(arena_halves, 64) * 2));
    arena_capacity_ = arena_halves;
  }
  if (batch > capacity_batch_) {
    const Dims in = graph_.infer_dims(height_, width_)[graph_.input()];
    cudaFree(input_);
    cudaFree(output_);
    cudaFree(pool_);
    KILN_CUDA_CHECK(cudaMalloc(&input_, static_cast<size_t>(batch) * in.size() * 4));
    KILN_CUDA_CHECK(cudaMalloc(&output_, static_cast<size_t>(batch) * output_elements(height_, width_) * 4));
    KILN_CUDA_CHECK(cudaMalloc(&pool_, std::max<size_t>(static_cast<size_t>(batch) * pool_floats_per_image_, 1) * 4));
    capacity_batch_ = batch;
  }
}

// A GEMM step's arguments for one batch size; its arena pointers are the plan's.
cuda::GemmArgs CudaEngine::gemm_args(const CudaStep& s, int batch, const BatchPlan& plan) const {
  const auto& dims = plan.memory.dims;
  const auto* wb = static_cast<const uint8_t*>(weights_);
  auto val = [&](int v) { return arena_ + plan.memory.offset[v]; };
  const Dims &x = dims[s.x], &y = dims[s.to_output ? graph_.output() : s.y];
  cuda::GemmArgs a;
  a.a = val(s.x);
  a.w = wb + s.w;
  a.bias = s.b == kNoBias ? nullptr : reinterpret_cast<const float*>(wb + s.b);
  a.gate = s.gate >= 0 ? val(s.gate) : nullptr;
  a.residual = s.residual >= 0 ? val(s.residual) : nullptr;
  a.out = s.to_output ? static_cast<void*>(output_) : static_cast<void*>(val(s.y));
  a.out_f32 = s.to_output;
  a.m = batch * x.h * x.w;
  a.n = y.c;
  a.k = x.c;
  a.rows_per_image = x.h * x.w;
  a.act = s.act;
  a.workspace = workspace_;
  a.fp8 = s.fp8;
  a.col_scale = s.fp8 ? reinterpret_cast<const float*>(wb + s.col_scale) : nullptr;
  a.a_inv_scale = s.a_inv_scale;
  a.out_e4m3 = s.out_e4m3;
  a.out_inv_scale = s.out_inv_scale;
  return a;
}

void CudaEngine::enqueue(int batch, const BatchPlan& plan, cudaStream_t st, int only_step) {
  const auto& dims = plan.memory.dims;
  auto* wb = static_cast<const uint8_t*>(weights_);
  auto wf = [&](size_t off) { return off == kNoBias ? nullptr : reinterpret_cast<const float*>(wb + off); };
  auto wh = [&](size_t off) { return reinterpret_cast<const __half*>(wb + off); };
  auto val = [&](int v) { return arena_ + plan.memory.offset[v]; };
  auto pool = [&](int slot) { return pool_ + pool_offsets_[slot] * batch; };
  if (only_step < 0 && pool_floats_per_image_ > 0)
    KILN_CUDA_CHECK(cudaMemsetAsync(pool_, 0, static_cast<size_t>(batch) * pool_floats_per_image_ * 4, st));
  for (int i = 0; i < static_cast<int>(steps_.size()); ++i) {
    if (only_step >= 0 && i != only_step) continue;
    const CudaStep& s = steps_[i];
    const Node& n = graph_.nodes()[s.node >= 0 ? s.node : 0];
    switch (s.kind) {
      case CudaStep::Stem: {
        cuda::StemArgs a;
        set_conv_geometry(a, batch, dims[s.x], dims[s.y], n, s.act);
        a.x = input_;
        a.w = wf(s.w);
        a.bias = wf(s.b);
        a.y = val(s.y);
        a.c_in = dims[s.x].c;
        a.c_out = dims[s.y].c;
        cuda::launch_stem(a, st);
        break;
      }
      case CudaStep::Gemm: {
        const cuda::GemmArgs a = gemm_args(s, batch, plan);
        int variant = plan.variants[i];
        if (!variant_runs(a, variant)) variant = cuda::gemm_default_variant(a);
        cuda::launch_gemm(a, variant, st);
        break;
      }
      case CudaStep::Depthwise: {
        cuda::DepthwiseArgs a;
        set_conv_geometry(a, batch, dims[s.x], dims[s.y], n, s.act);
        a.x = val(s.x);
        a.x_mode = s.x_mode;
        a.x_scale = s.x_scale;
        a.x_inv_scale = s.x_inv_scale;
        a.w = wh(s.w);
        a.bias = wf(s.b);
        a.y = val(s.y);
        a.pool = s.pool_slot >= 0 ? pool(s.pool_slot) : nullptr;
        a.c = dims[s.x].c;
        cuda::launch_depthwise(a, st);
        break;
      }
      case CudaStep::SqueezeExcite: {
        cuda::SqueezeExciteArgs a;
        a.pool = pool(s.pool_slot);
        a.w1 = wf(s.w);
        a.b1 = wf(s.b);
        a.w2 = wf(s.w2);
        a.b2 = wf(s.b2);
        a.gate = val(s.y);
        a.batch = batch;
        a.c = dims[s.y].c;
        a.rd = s.rd;
        a.pixels = dims[s.other].h * dims[s.other].w;
        a.act1 = s.act;
        a.act2 = s.act2;
        cuda::launch_squeeze_excite(a, st);
        break;
      }
      case CudaStep::Pool: {
        const Dims& x = dims[s.x];
        cuda::launch_global_avg_pool(val(s.x), val(s.y), batch, x.h * x.w, x.c, st);
        break;
      }
      case CudaStep::Scale: {
        const Dims& x = dims[s.x];
        cuda::launch_scale_channels(val(s.x), val(s.gate), val(s.y), batch, x.h * x.w, x.c, st);
        break;
      }
      case CudaStep::Add:
        cuda::launch_add(val(s.x), val(s.other), val(s.y), static_cast<int64_t>(batch) * dims[s.x].size(), st);
        break;
      case CudaStep::LinearNaive: {
        const int out_value = s.to_output ? graph_.output() : s.y;
        cuda::launch_linear_naive(val(s.x), wf(s.w), wf(s.b),
                                  s.to_output ? static_cast<void*>(output_) : static_cast<void*>(val(s.y)), s.to_output,
                                  batch, dims[s.x].c, dims[out_value].c, s.act, st);
        break;
      }
      case CudaStep::ToFloat:
        cuda::launch_half_to_float(val(s.x), output_, static_cast<int64_t>(batch) * dims[s.x].size(), st);
        break;
    }
    KILN_CUDA_CHECK(cudaGetLastError());
  }
}

void CudaEngine::tune(int batch, BatchPlan& plan) {
  // Fill the input and run once so that every buffer holds realistic values, then time each
  // tile variant of each GEMM in place and keep the fastest.
  const Dims& in = plan.memory.dims[graph_.input()];
  std::vector<float> host(static_cast<size_t>(batch) * in.size());
  fill_benchmark_input(host);
  KILN_CUDA_CHECK(cudaMemcpyAsync(input_, host.data(), host.size() * 4, cudaMemcpyHostToDevice, stream_));
  enqueue(batch, plan, stream_);
  cudaEvent_t start, stop;
  KILN_CUDA_CHECK(cudaEventCreate(&start));
  KILN_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < static_cast<int>(steps_.size()); ++i) {
    if (steps_[i].kind != CudaStep::Gemm) continue;
    float best = 1e30f;
    int best_variant = -1;
    const cuda::GemmArgs args = gemm_args(steps_[i], batch, plan);
    for (int v = 0; v < cuda::kGemmVariants; ++v) {
      if (!variant_runs(args, v)) continue;
      plan.variants[i] = v;
      enqueue(batch, plan, stream_, i);  // warm up
      KILN_CUDA_CHECK(cudaEventRecord(start, stream_));
      for (int r = 0; r < 10; ++r) enqueue(batch, plan, stream_, i);
      KILN_CUDA_CHECK(cudaEventRecord(stop, stream_));
      KILN_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (ms < best) {
        best = ms;
        best_variant = v;
      }
    }
    plan.variants[i] = best_variant >= 0 ? best_variant : cuda::gemm_default_variant(args);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

void CudaEngine::prepare(int batch, int height, int width) {
  KILN_CHECK(batch >= 1, "[cuda] batch must be at least 1");
  if (height != height_ || width != width_) {
    drop_graphs();
    plans_.clear();
    height_ = height;
    width_ = width;
  }
  auto it = plans_.find(batch);
  if (it != plans_.end() && it->second.graph) return;
  if (it == plans_.end()) {
    BatchPlan plan;
    plan.memory = plan_memory(
        graph_,
        [&] {
          std::vector<MemoryStep> ms;
          for (const auto& s : steps_) ms.push_back({s.reads, s.writes});
          return ms;
        }(),
        batch, height, width, {}, 64);
    plan.variants.assign(steps_.size(), -1);
    it = plans_.emplace(batch, std::move(plan)).first;
    ensure_capacity(it->second.memory.arena_elements, batch);
    auto saved = saved_variants_.find(batch);
    if (saved != saved_variants_.end()) {
      it->second.variants = saved->second;
      for (size_t i = 0; i < steps_.size(); ++i) {  // a saved choice this step cannot run: the default
        if (steps_[i].kind != CudaStep::Gemm) continue;
        const cuda::GemmArgs args = gemm_args(steps_[i], batch, it->second);
        int& v = it->second.variants[i];
        if (!variant_runs(args, v)) v = cuda::gemm_default_variant(args);
      }
    } else {
      tune(batch, it->second);
    }
  } else {
    ensure_capacity(it->second.memory.arena_elements, batch);
  }
  for (auto& [b, p] : plans_) {  // capture every plan that lost its graph (or never had one)
    if (p.graph) continue;
    cudaGraph_t g;
    KILN_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    enqueue(b, p, stream_);
    KILN_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    KILN_CUDA_CHECK(cudaGraphInstantiate(&p.graph, g, 0));
    cudaGraphDestroy(g);
  }
}

void CudaEngine::replay(int batch, cudaStream_t st) {
  auto it = plans_.find(batch);
  KILN_CHECK(it != plans_.end() && it->second.graph, "[cuda] batch {} was not prepared", batch);
  KILN_CUDA_CHECK(cudaGraphLaunch(it->second.graph, st));
}

void CudaEngine::run(const float* input, int batch, int height, int width, float* output) {
  prepare(batch, height, width);
  const Dims& in = plans_[batch].memory.dims[graph_.input()];
  KILN_CUDA_CHECK(
      cudaMemcpyAsync(input_, input, static_cast<size_t>(batch) * in.size() * 4, cudaMemcpyHostToDevice, stream_));
  replay(batch, stream_);
  KILN_CUDA_CHECK(cudaMemcpyAsync(output, output_, static_cast<size_t>(batch) * output_elements(height, width) * 4,
                                  cudaMemcpyDeviceToHost, stream_));
  KILN_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

std::vector<double> CudaEngine::benchmark(int batch, int height, int width, int warmup, int samples,
                                          int calls_per_sample) {
  prepare(batch, height, width);
  std::vector<float> host(static_cast<size_t>(batch) * input_channels() * height * width);
  fill_benchmark_input(host);
  KILN_CUDA_CHECK(cudaMemcpyAsync(input_, host.data(), host.size() * 4, cudaMemcpyHostToDevice, stream_));
  for (int i = 0; i < warmup; ++i) replay(batch, stream_);
  cudaEvent_t start, stop;
  KILN_CUDA_CHECK(cudaEventCreate(&start));
  KILN_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int s = 0; s < samples; ++s) {
    KILN_CUDA_CHECK(cudaEventRecord(start, stream_));
    for (int c = 0; c < calls_per_sample; ++c) replay(batch, stream_);
    KILN_CUDA_CHECK(cudaEventRecord(stop, stream_));
    KILN_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    KILN_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(static_cast<double>(t) / calls_per_sample);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

std::map<std::string, double> CudaEngine::profile(int batch, int height, int width, int iterations) {
  prepare(batch, height, width);
  const BatchPlan& plan = plans_[batch];
  std::vector<cudaEvent_t> ev(steps_.size() + 1);
  for (auto& e : ev) KILN_CUDA_CHECK(cudaEventCreate(&e));
  std::map<std::string, double> ms;
  for (int it = 0; it < iterations; ++it) {
    if (pool_floats_per_image_ > 0)
      KILN_CUDA_CHECK(cudaMemsetAsync(pool_, 0, static_cast<size_t>(batch) * pool_floats_per_image_ * 4, stream_));
    for (size_t i = 0; i < steps_.size(); ++i) {
      KILN_CUDA_CHECK(cudaEventRecord(ev[i], stream_));
      enqueue(batch, plan, stream_, static_cast<int>(i));
    }
    KILN_CUDA_CHECK(cudaEventRecord(ev.back(), stream_));
    KILN_CUDA_CHECK(cudaEventSynchronize(ev.back()));
    for (size_t i = 0; i < steps_.size(); ++i) {
      float t = 0;
      KILN_CUDA_CHECK(cudaEventElapsedTime(&t, ev[i], ev[i + 1]));
      ms[steps_[i].group] += t / iterations;
    }
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return ms;
}

std::vector<std::string> CudaEngine::plan_summary(int batch) const {
  static const char* kinds[] = {"stem",  "gemm", "depthwise", "squeeze_excite", "pool",
                                "scale", "add",  "linear",    "to_float"};
  std::vector<std::string> out;
  auto it = plans_.find(batch);
  if (it == plans_.end()) return out;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const auto& s = steps_[i];
    std::string line = fmt::format("{} {}", kinds[s.kind], s.name);
    if (s.kind == CudaStep::Gemm) {
      line += fmt::format(" {}", cuda::gemm_variant_name(it->second.variants[i]));
      if (s.fp8) line += " fp8";
      if (s.gate >= 0) line += " +gate";
      if (s.residual >= 0) line += " +residual";
      if (s.out_e4m3) line += " ->e4m3";
    }
    if (s.kind == CudaStep::Depthwise && s.x_mode != cuda::DepthwiseInput::F16)
      line += s.x_mode == cuda::DepthwiseInput::E4M3 ? " e4m3-in" : " fp8-in";
    if (s.kind == CudaStep::Depthwise && s.pool_slot >= 0) line += " +pool";
    out.push_back(line);
  }
  return out;
}

}  // namespace kiln
