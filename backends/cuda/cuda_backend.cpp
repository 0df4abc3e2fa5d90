#include "backends/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "backends/cuda/cublaslt_gemm.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cudnn_conv.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

// Defined in a file the build generates from the files of backends/cuda/ops/ (CMakeLists.txt).
void register_cuda_kernels(CudaKernelRegistry& registry);

bool cuda_backend_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::shared_ptr<Backend> make_cuda_backend(const std::string& precision) {
  return std::make_shared<CudaBackend>(precision);
}

// --- Kernel registry and helpers

CudaKernelRegistry& CudaKernelRegistry::instance() {
  static CudaKernelRegistry* registry = [] {
    auto* r = new CudaKernelRegistry();
    register_cuda_kernels(*r);
    return r;
  }();
  return *registry;
}

void CudaKernelRegistry::add(const std::string& op, CudaKernelEntry entry) {
  KILN_CHECK(entries_.emplace(op, std::move(entry)).second, "[cuda] two kernels for op '{}'", op);
}

const CudaKernelEntry* CudaKernelRegistry::find(const std::string& op) const {
  auto it = entries_.find(op);
  return it == entries_.end() ? nullptr : &it->second;
}

DType input_dtype(const Graph& g, const Node& n, int slot) { return g.values()[n.inputs.at(slot)].dtype; }

std::vector<DType> output_dtypes(const Graph& g, const Node& n) {
  std::vector<std::optional<DType>> in;
  for (int v : n.inputs) in.push_back(v < 0 ? std::nullopt : std::optional<DType>(g.values()[v].dtype));
  return n.def().infer_dtypes(n, in);
}

bool io_types_in(const Graph& g, const Node& n, std::initializer_list<DType> allowed) {
  auto ok = [&](DType t) { return std::find(allowed.begin(), allowed.end(), t) != allowed.end(); };
  for (int v : n.inputs)
    if (v >= 0 && !ok(g.values()[v].dtype)) return false;
  for (DType t : output_dtypes(g, n))
    if (!ok(t)) return false;
  return true;
}

Shape constant_shape(const Graph& g, const Node& n, int slot) {
  const int v = n.input(slot);
  if (v < 0 || g.values()[v].kind != ValueKind::Constant) return {};
  return resolve(g.values()[v].shape, {});
}

int compute_capability() {
  static const int cc = [] {
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    return major * 10 + minor;
  }();
  return cc;
}

// --- Packed weights

size_t CudaWeights::place(size_t bytes) {
  KILN_CHECK(!device_, "[cuda] a kernel packed weights after they were uploaded");
  const size_t off = (size_ + 255) / 256 * 256;
  size_ = off + bytes;
  return off;
}

uint8_t* CudaWeights::make(size_t bytes, size_t* offset) {
  *offset = place(bytes);
  pieces_.push_back({*offset, std::vector<uint8_t>(bytes), {}});
  return pieces_.back().made.data();
}

size_t CudaWeights::add_f16(std::span<const float> v) {
  size_t off = 0;
  convert_from_f32(DType::F16, v.data(), make(v.size() * 2, &off), static_cast<int64_t>(v.size()));
  return off;
}

size_t CudaWeights::add_f16(const ConstantView& c, size_t count) {
  const size_t n = static_cast<size_t>(c.numel());
  KILN_CHECK(n <= count, "[cuda] a constant of {} values packed into {}", n, count);
  if (c.dtype == DType::F16) {
    const size_t off = place(count * 2);
    pieces_.push_back({off, {}, c.bytes});  // the padding: the upload zeroes the whole buffer first
    return off;
  }
  size_t off = 0;
  uint8_t* out = make(count * 2, &off);
  // In slices, so that no fp32 copy of a large weight is made.
  constexpr size_t kSlice = 16384;
  std::vector<float> f(std::min(n, kSlice));
  const size_t width = dtype_size(c.dtype);
  for (size_t i = 0; i < n; i += kSlice) {
    const int64_t k = static_cast<int64_t>(std::min(kSlice, n - i));
    convert_to_f32(c.dtype, c.bytes.data() + i * width, f.data(), k);
    convert_from_f32(DType::F16, f.data(), out + 2 * i, k);
  }
  return off;
}

size_t CudaWeights::add_f32(std::span<const float> v) {
  size_t off = 0;
  std::memcpy(make(v.size() * 4, &off), v.data(), v.size() * 4);
  return off;
}

size_t CudaWeights::add_e4m3(std::span<const float> v) {
  size_t off = 0;
  uint8_t* out = make(v.size(), &off);
  for (size_t i = 0; i < v.size(); ++i) out[i] = encode_e4m3(v[i]);
  return off;
}

// Pageable sources: each copy is staged before cudaMemcpyAsync returns; the stream is waited
// for so that no kernel on another stream can read the weights before they arrive.
void CudaWeights::upload(cudaStream_t stream) {
  if (device_ || pieces_.empty()) return;
  KILN_CUDA_CHECK(cudaMalloc(&device_, size_));
  KILN_CUDA_CHECK(cudaMemsetAsync(device_, 0, size_, stream));
  for (const Piece& p : pieces_) {
    const std::span<const uint8_t> bytes = p.borrowed.empty() ? std::span<const uint8_t>(p.made) : p.borrowed;
    KILN_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(device_) + p.offset, bytes.data(), bytes.size(),
                                    cudaMemcpyHostToDevice, stream));
  }
  KILN_CUDA_CHECK(cudaStreamSynchronize(stream));
  pieces_.clear();
  pieces_.shrink_to_fit();
}

CudaWeights::~CudaWeights() { cudaFree(device_); }

// --- Backend

CudaBackend::CudaBackend(const std::string& precision) : precision_(precision) {
  KILN_CHECK(cuda_backend_available(), "[cuda] no CUDA device");
  KILN_CHECK(precision == "fp32" || precision == "fp16", "[cuda] unknown precision '{}'", precision);
  KILN_CUDA_CHECK(cudaGetDevice(&device_));
  cudaDeviceProp prop{};
  KILN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  device_name_ = prop.name;
  int driver = 0;
  KILN_CUDA_CHECK(cudaDriverGetVersion(&driver));
  auto version = [](size_t v) { return v ? std::to_string(v) : std::string("none"); };
  hardware_ = fmt::format("{}, driver {}.{}, cuBLASLt {}, cuDNN {}", device_name_, driver / 1000, driver % 1000 / 10,
                          version(CublasLtGemm::version()), version(cuda::cudnn_conv::version()));
  KILN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  KILN_CUDA_CHECK(cudaMalloc(&error_word_, sizeof(uint32_t)));
  KILN_CUDA_CHECK(cudaMemset(error_word_, 0, sizeof(uint32_t)));
  KILN_CUDA_CHECK(cudaMallocHost(&error_copy_, sizeof(uint32_t)));
  *error_copy_ = 0;
}

CudaBackend::~CudaBackend() {
  if (stream_) cudaStreamSynchronize(stream_);
  cudaFree(error_word_);
  cudaFreeHost(error_copy_);
  if (stream_) cudaStreamDestroy(stream_);
}

std::string CudaBackend::device() const { return fmt::format("cuda:{} ({})", device_, device_name_); }

void CudaBackend::convert(Graph& graph) const {
  if (precision_ == "fp16") lower_precision(graph, DType::F16);
}

bool CudaBackend::supports(const Graph& graph, const Node& node) const {
  const CudaKernelEntry* e = CudaKernelRegistry::instance().find(node.op);
  return e && e->supports(graph, node);
}

void CudaBackend::fuse(Graph& graph) const {
  const RewriteContext c{name(), [](const Graph& g, const Node& n) {
                           const CudaKernelEntry* e = CudaKernelRegistry::instance().find(n.op);
                           return e && e->fast(g, n);
                         }};
  transpose_as_reshape(graph, c);
  fold_input_layout(graph, c);
  fuse_conv_mean(graph, c);
  fuse_mlp(graph, c);
  fuse_channel_gate(graph, c);
  fuse_residual_add(graph, c);
  fold_output_cast(graph, c);
  fuse_fp8_output(graph, c);
  fuse_norm_linear(graph, c);
  fuse_log_softmax_topk(graph, c);
  fuse_kv_cache_attention(graph, c);
  fuse_qkv_attention(graph, c);
  fuse_write_heads(graph, c);
}

std::unique_ptr<Kernel> CudaBackend::make_kernel(const Graph& graph, int node, const ConstantLookup& constants) {
  const Node& n = graph.nodes()[node];
  const CudaKernelEntry* e = CudaKernelRegistry::instance().find(n.op);
  KILN_CHECK(e, "[cuda] {}: no CUDA kernel for op '{}'", n.name, n.op);
  CudaKernelContext c{graph, n, constants, weights_, error_word_, precision_};
  auto k = e->make(c);
  error_checks_ = error_checks_ || c.checks_inputs;
  return k;
}

void* CudaBackend::allocate(size_t bytes) {
  void* p = nullptr;
  KILN_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
  return p;
}

void CudaBackend::release(void* p) { cudaFree(p); }

// Host memory the engine hands over is pageable: cudaMemcpyAsync stages it before returning,
// so the caller may reuse it at once.
void CudaBackend::upload(void* dst, const void* src, size_t bytes) {
  KILN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::download(void* dst, const void* src, size_t bytes) {
  KILN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  KILN_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::zero(void* dst, size_t bytes) { KILN_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_)); }

// Page-locked memory is a limited system resource: nullptr (the engine then copies from
// pageable memory) rather than an error when the system refuses.
void* CudaBackend::allocate_host(size_t bytes) {
  void* p = nullptr;
  if (cudaMallocHost(&p, std::max<size_t>(bytes, 64)) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so that later checks do not report it
    return nullptr;
  }
  return p;
}

void CudaBackend::release_host(void* p) { cudaFreeHost(p); }

void CudaBackend::download_queued(void* host, const void* src, size_t bytes) {
  KILN_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
}

void CudaBackend::synchronize() { KILN_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

double CudaBackend::time_ms(const std::function<void()>& work) {
  cudaEvent_t start, stop;
  KILN_CUDA_CHECK(cudaEventCreate(&start));
  KILN_CUDA_CHECK(cudaEventCreate(&stop));
  KILN_CUDA_CHECK(cudaEventRecord(start, stream_));
  work();
  KILN_CUDA_CHECK(cudaEventRecord(stop, stream_));
  KILN_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  KILN_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

namespace {

class CudaGraphReplay : public Replay {
 public:
  CudaGraphReplay(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraphReplay() override { cudaGraphExecDestroy(exec_); }
  void launch() override { KILN_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

}  // namespace

std::unique_ptr<Replay> CudaBackend::capture(const std::function<void()>& work) {
  cudaGraph_t g;
  KILN_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    work();
  } catch (...) {
    cudaStreamEndCapture(stream_, &g);
    throw;
  }
  KILN_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
  cudaGraphExec_t exec;
  KILN_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
  cudaGraphDestroy(g);
  return std::make_unique<CudaGraphReplay>(exec, stream_);
}

std::vector<double> CudaBackend::time_replayed_ms(const std::vector<std::function<void()>>& work) {
  // Marks recorded as nodes of the graph (external event records), around each piece.
  struct Marks {
    std::vector<cudaEvent_t> events;
    ~Marks() {
      for (cudaEvent_t e : events) cudaEventDestroy(e);
    }
  } marks;
  for (size_t i = 0; i <= work.size(); ++i) {
    cudaEvent_t e;
    KILN_CUDA_CHECK(cudaEventCreate(&e));
    marks.events.push_back(e);
  }
  const auto replay = capture([&] {
    for (size_t i = 0; i < work.size(); ++i) {
      KILN_CUDA_CHECK(cudaEventRecordWithFlags(marks.events[i], stream_, cudaEventRecordExternal));
      work[i]();
    }
    KILN_CUDA_CHECK(cudaEventRecordWithFlags(marks.events.back(), stream_, cudaEventRecordExternal));
  });
  // The median of several replays: from one replay, close variants' order moved between two
  // builds of a network and took 4% of its time with it (seven layers of one shape follow one
  // choice).
  constexpr int kReplays = 5;
  replay->launch();  // the first launch uploads the graph
  std::vector<std::vector<double>> samples(work.size());
  for (int r = 0; r < kReplays; ++r) {
    replay->launch();
    KILN_CUDA_CHECK(cudaEventSynchronize(marks.events.back()));
    for (size_t i = 0; i < work.size(); ++i) {
      float t = 0;
      KILN_CUDA_CHECK(cudaEventElapsedTime(&t, marks.events[i], marks.events[i + 1]));
      samples[i].push_back(t);
    }
  }
  std::vector<double> ms;
  for (auto& s : samples) {
    std::nth_element(s.begin(), s.begin() + kReplays / 2, s.end());
    ms.push_back(s[kReplays / 2]);
  }
  return ms;
}

void CudaBackend::queue_error_readback() {
  if (error_checks_)
    KILN_CUDA_CHECK(cudaMemcpyAsync(error_copy_, error_word_, sizeof *error_copy_, cudaMemcpyDeviceToHost, stream_));
}

void CudaBackend::check_errors() {
  if (!error_checks_) return;
  const uint32_t word = *static_cast<volatile uint32_t*>(error_copy_);
  if (!word) return;
  *error_copy_ = 0;
  KILN_CUDA_CHECK(cudaMemsetAsync(error_word_, 0, sizeof word, stream_));
  if (word & kCudaIndexOutOfRange) fail("[cuda] an index (e.g. a token id) was out of range for its table");
  if (word & kCudaOffsetOutOfRange) fail("[cuda] a slice offset (e.g. a cache position) was out of range");
  fail("[cuda] a length (e.g. kv_length) was out of range");
}

}  // namespace kiln
