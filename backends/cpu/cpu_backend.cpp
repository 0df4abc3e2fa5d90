#include "backends/cpu/cpu_backend.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/pages.h"
#include "backends/cpu/threads.h"
#include "core/dtype.h"
#include "core/error.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

// Defined in files the build generates from the files of backends/cpu/ops/ and
// backends/cpu/fast/ (CMakeLists.txt).
void register_cpu_kernels(CpuKernelRegistry& registry);
void register_cpu_fast_kernels(CpuKernelRegistry& registry);

CpuKernelRegistry& CpuKernelRegistry::instance() {
  static CpuKernelRegistry* registry = [] {
    auto* r = new CpuKernelRegistry();
    register_cpu_kernels(*r);
    register_cpu_fast_kernels(*r);
    return r;
  }();
  return *registry;
}

void CpuKernelRegistry::add(const std::string& op, CpuKernelFactory factory) {
  KILN_CHECK(factories_.emplace(op, std::move(factory)).second, "[cpu] two kernels for op '{}'", op);
}

void CpuKernelRegistry::add_fast(const std::string& op, CpuKernelFactory factory) {
  KILN_CHECK(factories_.count(op), "[cpu] a fast kernel for op '{}' without a reference kernel", op);
  KILN_CHECK(fast_factories_.emplace(op, std::move(factory)).second, "[cpu] two fast kernels for op '{}'", op);
}

const CpuKernelFactory* CpuKernelRegistry::find(const std::string& op) const {
  auto it = factories_.find(op);
  return it == factories_.end() ? nullptr : &it->second;
}

const CpuKernelFactory* CpuKernelRegistry::find_fast(const std::string& op) const {
  auto it = fast_factories_.find(op);
  return it == fast_factories_.end() ? nullptr : &it->second;
}

namespace {

// Runs a CPU kernel on the thread count set for the process, with denormals flushed
// (cpu/threads.h), and, unless the kernel moves any type itself, gives it its float inputs as
// f32 and rounds its f32 outputs to the outputs' types.
class CpuKernelAdapter : public Kernel {
 public:
  explicit CpuKernelAdapter(std::unique_ptr<CpuKernel> inner) : inner_(std::move(inner)) {}
  int variants() const override { return inner_->variants(); }
  std::string variant_name(int variant) const override { return inner_->variant_name(variant); }
  bool variant_runs(const KernelArgs& args, int variant) const override { return inner_->variant_runs(args, variant); }
  int default_variant(const KernelArgs& args) const override { return inner_->default_variant(args); }
  size_t workspace_bytes(const KernelArgs& args, int variant) const override {
    return inner_->workspace_bytes(args, variant);
  }
  bool packs_input(int slot) const override { return inner_->packs_input(slot); }
  bool zeroed_output(int slot) const override { return inner_->zeroed_output(slot); }
  std::string describe() const override { return inner_->describe(); }
  void run(const KernelArgs& args, int variant) override {
    cpu::use_threads();
    const cpu::FlushDenormals flush;
    if (inner_->any_dtype()) return inner_->run(args, variant);
    KernelArgs a = args;
    size_t n_in = 0, n_out = 0;
    for (auto& t : a.inputs) n_in += t.data && is_float(t.dtype) && t.dtype != DType::F32;
    for (auto& t : a.outputs) n_out += is_float(t.dtype) && t.dtype != DType::F32;
    if (n_in + n_out == 0) return inner_->run(args, variant);
    in_.resize(a.inputs.size());
    out_.resize(a.outputs.size());
    for (size_t i = 0; i < a.inputs.size(); ++i) {
      TensorRef& t = a.inputs[i];
      if (!t.data || !is_float(t.dtype) || t.dtype == DType::F32) continue;
      in_[i].resize(static_cast<size_t>(t.numel()));
      convert_to_f32(t.dtype, t.data, in_[i].data(), t.numel());
      t.data = in_[i].data();
      t.dtype = DType::F32;
    }
    for (size_t i = 0; i < a.outputs.size(); ++i) {
      TensorRef& t = a.outputs[i];
      if (!is_float(t.dtype) || t.dtype == DType::F32) continue;
      out_[i].assign(static_cast<size_t>(t.numel()), 0.0f);
      t.data = out_[i].data();
      t.dtype = DType::F32;
    }
    inner_->run(a, variant);
    for (size_t i = 0; i < a.outputs.size(); ++i)
      if (a.outputs[i].data != args.outputs[i].data)
        convert_from_f32(args.outputs[i].dtype, out_[i].data(), args.outputs[i].data, args.outputs[i].numel());
  }

 private:
  std::unique_ptr<CpuKernel> inner_;
  std::vector<std::vector<float>> in_, out_;
};

}  // namespace

bool CpuBackend::supports(const Graph&, const Node& node) const {
  return CpuKernelRegistry::instance().find(node.op) != nullptr;
}

void CpuBackend::fuse(Graph& graph) const {
  if (reference_) return;
  const RewriteContext c{name(), [this](const Graph& g, const Node& n) { return supports(g, n); }};
  transpose_as_reshape(graph, c);
  fold_input_layout(graph, c);
  fuse_conv_mean(graph, c);
  fuse_mlp(graph, c);
  fuse_channel_gate(graph, c);
  fuse_residual_add(graph, c);
}

std::unique_ptr<Kernel> CpuBackend::make_kernel(const Graph& graph, int node, const ConstantLookup& constants) {
  const Node& n = graph.nodes()[node];
  const CpuKernelRegistry& registry = CpuKernelRegistry::instance();
  std::unique_ptr<CpuKernel> k;
  if (!reference_)
    if (const CpuKernelFactory* fast = registry.find_fast(n.op)) k = (*fast)(graph, node, constants);
  if (!k) {
    const CpuKernelFactory* factory = registry.find(n.op);
    KILN_CHECK(factory, "[cpu] {}: no CPU kernel for op '{}'", n.name, n.op);
    k = (*factory)(graph, node, constants);
  }
  return std::make_unique<CpuKernelAdapter>(std::move(k));
}

std::string CpuBackend::hardware() const {
  if (reference_) return device();
  // x86 names the model; Arm's cpuinfo has none, and its implementer and part codes tell cores
  // apart instead, so that a plan timed on one Arm core is not taken on another.
  static const std::string model = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string implementer, part;
    for (std::string line; std::getline(cpuinfo, line);) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const size_t start = line.find_first_not_of(" \t", colon + 1);
      const std::string value = start == std::string::npos ? "" : line.substr(start);
      if (line.rfind("model name", 0) == 0 && !value.empty()) return value;
      if (line.rfind("CPU implementer", 0) == 0 && implementer.empty()) implementer = value;
      if (line.rfind("CPU part", 0) == 0 && part.empty()) part = value;
    }
    return implementer.empty() ? std::string("cpu") : fmt::format("Arm implementer {} part {}", implementer, part);
  }();
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}, oneDNN {}.{}.{}, {} thread{}", model, v->major, v->minor, v->patch, cpu::threads(),
                     cpu::threads() == 1 ? "" : "s");
}

void* CpuBackend::allocate(size_t bytes) { return cpu::allocate_pages(bytes); }

void CpuBackend::release(void* p) { std::free(p); }
void CpuBackend::upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::download(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::zero(void* dst, size_t bytes) { std::memset(dst, 0, bytes); }

double CpuBackend::time_ms(const std::function<void()>& work) {
  auto t0 = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kiln
