// What a backend offers the engine (backends/engine.h): which nodes it can run, the rewrites it
// wants, a kernel per node, and memory. Each backend implements each op in its own file
// (backends/<backend>/ops/<op>.cpp) and registers the kernel by op name.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape.h"

namespace kiln {

// A tensor as a kernel sees it: its elements (host or device memory), type and shape.
struct TensorRef {
  void* data = nullptr;  // nullptr: an absent optional input
  DType dtype = DType::F32;
  Shape shape;
  // An input that no node of the run writes before this one reads it (a constant, a graph input,
  // a state as the last run left it; views such as reshape write nothing), read by a node after
  // the run's first that launches anything: a GPU kernel may read it before it waits for its
  // predecessor (backends/cuda/launch.cuh), which a decoder step's attention does.
  bool settled = false;
  int64_t numel() const;
  size_t bytes() const;
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// One node's run: its tensors, scratch memory and the backend's queue (a cudaStream_t).
struct KernelArgs {
  const Node* node = nullptr;
  std::vector<TensorRef> inputs, outputs;
  void* workspace = nullptr;
  void* stream = nullptr;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Implementations of the node the engine may time and choose from per plan (GEMM tiles).
  virtual int variants() const { return 1; }
  virtual std::string variant_name(int variant) const { return "default"; }
  virtual bool variant_runs(const KernelArgs& args, int variant) const { return true; }
  virtual int default_variant(const KernelArgs& args) const { return 0; }
  virtual size_t workspace_bytes(const KernelArgs& args, int variant) const { return 0; }
  // Input slots whose constant the kernel takes from the lookup itself when it is made (copied
  // into its own memory, or read where the lookup holds it); the engine does not place those
  // constants on the device.
  virtual bool packs_input(int slot) const { return false; }
  // Output slots the kernel accumulates into: the engine zeroes them before every run.
  virtual bool zeroed_output(int slot) const { return false; }
  // What a plan summary says of the kernel beyond the op ("gemm +gate +residual").
  virtual std::string describe() const { return {}; }
  virtual void run(const KernelArgs& args, int variant) = 0;
};

// A constant (bundle tensor) as stored: its type may be narrower than the graph's (F16 weights
// of an fp16 bundle for an f32 constant). Its bytes stay valid while the lookup that returned it
// exists: an engine keeps its lookup, and CPU kernels read constants in place rather than copy
// them (a bundle's mapped file, a model definition's weights).
struct ConstantView {
  DType dtype = DType::F32;
  Shape shape;
  std::span<const uint8_t> bytes;
  int64_t numel() const;          // checked against the bytes
  void to_f32(float* out) const;  // numel() values
  std::vector<float> to_f32() const;
};
using ConstantLookup = std::function<ConstantView(const std::string&)>;

// Work captured once and replayed (a CUDA graph).
class Replay {
 public:
  virtual ~Replay() = default;
  virtual void launch() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;    // "cpu", "cuda"
  virtual std::string device() const = 0;  // "cpu", "cuda:0 (NVIDIA H200)"
  // The hardware (and the libraries) kernel timings hold for ("NVIDIA H200, driver 13.0, cuBLASLt
  // 130100, cuDNN 91000"; see CpuBackend::hardware).
  virtual std::string hardware() const { return device(); }
  // Rewrites the whole graph before placement into the types this backend computes in (e.g.
  // f32 activations as f16).
  virtual void convert(Graph& graph) const {}
  // Whether a kernel exists for this node as it stands (op, dtypes, attributes, fixed dims).
  virtual bool supports(const Graph& graph, const Node& node) const = 0;
  // Rewrites after placement (fusions); only nodes with node.device == name() may change, and
  // only into nodes supports() accepts.
  virtual void fuse(Graph& graph) const {}
  // The kernel of graph.nodes()[node]; constants it packs it reads through `constants`.
  virtual std::unique_ptr<Kernel> make_kernel(const Graph& graph, int node, const ConstantLookup& constants) = 0;
  // Called once every kernel is made (a backend may upload what they packed).
  virtual void kernels_made() {}

  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // Whether kernels can read host memory as it is (the CPU): constants are then used where the
  // lookup holds them instead of copied into allocate()d memory.
  virtual bool reads_host_memory() const { return false; }
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;    // host -> this backend
  virtual void download(void* dst, const void* src, size_t bytes) = 0;  // after queued work
  virtual void zero(void* dst, size_t bytes) = 0;                       // queued
  // Host memory that queued copies may use (page-locked on a GPU), or nullptr where plain
  // host memory serves (the CPU). The queued copies take only such memory, and a replay
  // captures them; where there is no queue they are the plain copies (and a GPU's upload is
  // queued already).
  virtual void* allocate_host(size_t bytes) { return nullptr; }
  virtual void release_host(void* p) {}
  virtual void upload_queued(void* dst, const void* host, size_t bytes) { upload(dst, host, bytes); }
  virtual void download_queued(void* host, const void* src, size_t bytes) { download(host, src, bytes); }
  virtual void synchronize() {}
  virtual void* stream() { return nullptr; }
  // ms that `work` (which queues kernels) takes to run.
  virtual double time_ms(const std::function<void()>& work) = 0;
  // `work` captured for replay, or nullptr where the backend cannot capture.
  virtual std::unique_ptr<Replay> capture(const std::function<void()>& work) { return nullptr; }
  // ms that each piece of work takes as a replay runs it: where the backend captures, all of
  // them in one replay with a timing mark between each two (one capture, not one per piece);
  // elsewhere each timed as it runs.
  virtual std::vector<double> time_replayed_ms(const std::vector<std::function<void()>>& work) {
    std::vector<double> ms;
    for (const auto& w : work) ms.push_back(time_ms(w));
    return ms;
  }
  // Whether tuning and captured replays pay off (a GPU); CPU kernels run as called.
  virtual bool is_accelerator() const { return false; }
  // How far timings of the same work move between runs here, as a fraction: a variant must beat
  // its kernel's default by more than that to replace it.
  virtual double timing_noise() const { return 0; }
  // Kernels that find an input they cannot use (an index out of range) where they cannot throw
  // (a GPU) raise a flag instead. queue_error_readback() queues a copy of the flags into host
  // memory (a replay may capture it); check_errors(), once that copy is synchronized, throws
  // if a flag was raised.
  virtual void queue_error_readback() {}
  virtual void check_errors() {}
};

// The backends kiln was built with. make_backend("cuda") throws where there is no usable GPU.
bool cuda_available();
std::shared_ptr<Backend> make_backend(const std::string& name, const std::string& precision);

}  // namespace kiln
