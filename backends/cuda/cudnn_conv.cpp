// cuDNN is opened with dlopen rather than linked: it is a large optional library (the PyTorch
// wheels and NVIDIA's images ship it, CUDA toolkits do not), and kiln's own kernels cover every
// conv without it. Its headers give the types; KILN_HAVE_CUDNN says the build found them.
#include "backends/cuda/cudnn_conv.h"

#include "core/error.h"

#if KILN_HAVE_CUDNN

#include <cudnn.h>
#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

// CUDNN_ATTR_OPERATIONGRAPH_HANDLE and CUDNN_ATTR_EXECUTION_PLAN_HANDLE are marked deprecated in
// cuDNN 9 (in favour of device-property descriptors) but still accepted (9.19 measured); they
// tie the graph and its plans to the handle that executes them.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace kiln::cuda::cudnn_conv {

namespace {

struct Api {
  decltype(&cudnnGetVersion) get_version = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnDestroy) destroy = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnBackendCreateDescriptor) create_descriptor = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) destroy_descriptor = nullptr;
  decltype(&cudnnBackendSetAttribute) set_attribute = nullptr;
  decltype(&cudnnBackendGetAttribute) get_attribute = nullptr;
  decltype(&cudnnBackendFinalize) finalize = nullptr;
  decltype(&cudnnBackendExecute) execute = nullptr;
};

const Api* api() {
  static const Api* loaded = []() -> const Api* {
    const char* env = std::getenv("KILN_CUDNN");
    if (env && std::strcmp(env, "0") == 0) return nullptr;
    void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    static Api a;
    bool ok = true;
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      ok = ok && fn;
    };
    load(a.get_version, "cudnnGetVersion");
    load(a.error_string, "cudnnGetErrorString");
    load(a.create, "cudnnCreate");
    load(a.destroy, "cudnnDestroy");
    load(a.set_stream, "cudnnSetStream");
    load(a.create_descriptor, "cudnnBackendCreateDescriptor");
    load(a.destroy_descriptor, "cudnnBackendDestroyDescriptor");
    load(a.set_attribute, "cudnnBackendSetAttribute");
    load(a.get_attribute, "cudnnBackendGetAttribute");
    load(a.finalize, "cudnnBackendFinalize");
    load(a.execute, "cudnnBackendExecute");
    if (!ok || a.get_version() < 90000) return nullptr;
    return &a;
  }();
  return loaded;
}

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) fail("[cuda] cuDNN {}: {}", what, api()->error_string(status));
}

// A backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) {
    check(api()->create_descriptor(type, &d_), "create descriptor");
  }
  ~Descriptor() {
    if (d_) api()->destroy_descriptor(d_);
  }
  Descriptor(Descriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  template <typename T>
  Descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
                  int64_t count = 1) {
    check(api()->set_attribute(d_, name, type, count, const_cast<T*>(values)), "set attribute");
    return *this;
  }
  Descriptor& set(cudnnBackendAttributeName_t name, const Descriptor& d) {
    cudnnBackendDescriptor_t v = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &v);
  }
  Descriptor& finalize() {
    check(api()->finalize(d_), "finalize");
    return *this;
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The tensors' unique ids in the graph; the variant pack names them again.
enum Uid : int64_t { kX = 1, kW, kBias, kResidual, kY, kVirtual };

// An NHWC (or OHWI) tensor as cuDNN sees it: dimensions in NCHW order, strides of NHWC.
Descriptor tensor(int64_t uid, cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w, int64_t align,
                  bool is_virtual = false) {
  const std::array<int64_t, 4> dims{n, c, h, w}, strides{h * w * c, 1, w * c, c};
  Descriptor d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), 4)
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), 4)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &align)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual)
      .finalize();
  return d;
}

// Whether an engine config's numerics are those of an fp32-accumulated direct conv (no
// Winograd, FFT or fp16 sums).
bool exact(cudnnBackendDescriptor_t config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t count = 0;
  if (api()->get_attribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  if (api()->get_attribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, notes.size(), &count,
                           notes.data()) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < count; ++i) switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
        return false;
      default:
        break;
    }
  return true;
}

// A problem's operation graph, the heuristic's engine configs in its order, and the plans
// finalized from them so far: finalizing compiles a kernel (NVRTC, about 0.2 s on an H200), so
// plans are made only as far as asked for.
struct Plans {
  cudnnHandle_t handle = nullptr;
  std::deque<Descriptor> graph;  // tensors and operations the configs were made from (kept in place)
  std::vector<Descriptor> configs;
  size_t tried = 0;  // configs tried so far
  std::vector<Descriptor> plans;
  std::vector<size_t> workspace;
};

// One handle per device and the plans of every problem, shared by all conv kernels of the
// process (a network repeats shapes, and an engine is planned once per batch size). Never
// destroyed: at exit the CUDA context may be gone before static destructors would run.
struct Registry {
  std::mutex mutex;  // planning, and setting the stream + executing on a shared handle
  std::map<int, cudnnHandle_t> handles;
  std::map<std::pair<int, CudnnConvShape>, std::unique_ptr<Plans>> plans;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

int current_device() {
  int device = 0;
  cudaGetDevice(&device);
  return device;
}

// A problem's graph and engine configs on the current device, made on first use (no plan yet);
// the caller holds the mutex.
Plans& plans_for(const CudnnConvShape& s) {
  Registry& reg = registry();
  const int device = current_device();
  auto it = reg.plans.find({device, s});
  if (it != reg.plans.end()) return *it->second;
  auto p = std::make_unique<Plans>();
  if (api()) {
    try {
      cudnnHandle_t& handle = reg.handles[device];
      if (!handle) {
        cudnnHandle_t h = nullptr;
        check(api()->create(&h), "create handle");
        handle = h;
      }
      std::deque<Descriptor>& g = p->graph;
      auto keep = [&](Descriptor d) -> const Descriptor& { return g.emplace_back(std::move(d)); };
      const Descriptor& x = keep(tensor(kX, CUDNN_DATA_HALF, s.n, s.c, s.h, s.w, s.align));
      const Descriptor& w = keep(tensor(kW, CUDNN_DATA_HALF, s.o, s.c, s.kh, s.kw, s.align));
      const Descriptor& y = keep(tensor(kY, CUDNN_DATA_HALF, s.n, s.o, s.oh, s.ow, s.align));
      int64_t next_virtual = kVirtual;
      auto virtual_y = [&]() -> const Descriptor& {
        return keep(tensor(next_virtual++, CUDNN_DATA_FLOAT, s.n, s.o, s.oh, s.ow, s.align, true));
      };
      const int epilogues = int{s.bias} + int{s.act != CudnnAct::None} + int{s.residual};
      int written = 0;  // epilogue steps so far: the last writes y
      auto out = [&]() -> const Descriptor& { return ++written == epilogues ? y : virtual_y(); };

      Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
      const int64_t dims = 2;
      const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
      const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
      const std::array<int64_t, 2> pre{s.pad_top, s.pad_left}, post{s.pad_bottom, s.pad_right},
          dilation{s.dilation_h, s.dilation_w}, stride{s.stride_h, s.stride_w};
      conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &dims)
          .set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32)
          .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
          .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pre.data(), 2)
          .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, post.data(), 2)
          .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dilation.data(), 2)
          .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride.data(), 2)
          .finalize();
      keep(std::move(conv));
      const Descriptor& conv_desc = g.back();

      std::vector<cudnnBackendDescriptor_t> ops;
      const Descriptor* cur = epilogues ? &virtual_y() : &y;
      const float one = 1.0f, zero = 0.0f;
      Descriptor fprop(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      fprop.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *cur)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv_desc)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &one)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &zero)
          .finalize();
      ops.push_back(keep(std::move(fprop)).get());

      // One pointwise step: out = mode(cur[, b]).
      auto pointwise = [&](cudnnPointwiseMode_t pw_mode, const Descriptor* b) {
        Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
        pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &pw_mode)
            .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &f32);
        if (pw_mode == CUDNN_POINTWISE_SWISH_FWD) pw.set(CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_FLOAT, &one);
        pw.finalize();
        const Descriptor& pw_desc = keep(std::move(pw));
        const Descriptor& result = out();
        Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
        op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw_desc).set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *cur);
        if (b) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
        op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, result).finalize();
        ops.push_back(keep(std::move(op)).get());
        cur = &result;
      };
      if (s.bias) {
        Descriptor bias(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
        const std::array<int64_t, 4> bias_dims{1, s.o, 1, 1}, bias_strides{s.o, 1, 1, 1};
        const int64_t uid = kBias, align = 16;
        bias.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &f32)
            .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, bias_dims.data(), 4)
            .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, bias_strides.data(), 4)
            .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
            .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &align)
            .finalize();
        pointwise(CUDNN_POINTWISE_ADD, &keep(std::move(bias)));
      }
      switch (s.act) {
        case CudnnAct::None:
          break;
        case CudnnAct::ReLU:
          pointwise(CUDNN_POINTWISE_RELU_FWD, nullptr);
          break;
        case CudnnAct::SiLU:
          pointwise(CUDNN_POINTWISE_SWISH_FWD, nullptr);
          break;
        case CudnnAct::Sigmoid:
          pointwise(CUDNN_POINTWISE_SIGMOID_FWD, nullptr);
          break;
      }
      if (s.residual)
        pointwise(CUDNN_POINTWISE_ADD, &keep(tensor(kResidual, CUDNN_DATA_HALF, s.n, s.o, s.oh, s.ow, s.align)));

      Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
      graph
          .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
               static_cast<int64_t>(ops.size()))
          .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle)
          .finalize();
      const Descriptor& op_graph = keep(std::move(graph));

      Descriptor heuristic(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
      const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
      heuristic.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, op_graph)
          .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &heur_mode)
          .finalize();
      int64_t count = 0;
      check(api()->get_attribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                 &count, nullptr),
            "heuristic results");
      std::vector<cudnnBackendDescriptor_t> raw;
      for (int64_t i = 0; i < count; ++i)
        raw.push_back(p->configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).get());
      check(api()->get_attribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                 &count, raw.data()),
            "heuristic results");
      while (static_cast<int64_t>(p->configs.size()) > count) p->configs.pop_back();  // as many as it filled
      p->handle = handle;
    } catch (const Error&) {
      p->configs.clear();  // a graph cuDNN cannot describe: no cuDNN variant for this shape
    }
  }
  return *reg.plans.emplace(std::pair{device, s}, std::move(p)).first->second;
}

// Whether the problem has a plan'th plan, finalizing configs in the heuristic's order until it
// does or none is left; the caller holds the mutex.
bool finalize_up_to(Plans& p, int plan) {
  while (static_cast<int>(p.plans.size()) <= plan && p.tried < p.configs.size()) {
    cudnnBackendDescriptor_t config = p.configs[p.tried++].get();
    if (!exact(config)) continue;
    Descriptor candidate(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    candidate.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &p.handle)
        .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, &config);
    if (api()->finalize(candidate.get()) != CUDNN_STATUS_SUCCESS) continue;  // the engine does not take the graph
    int64_t bytes = 0, n = 0;
    check(api()->get_attribute(candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                               &bytes),
          "workspace size");
    p.workspace.push_back(static_cast<size_t>(bytes));
    p.plans.push_back(std::move(candidate));
  }
  return plan >= 0 && plan < static_cast<int>(p.plans.size());
}

}  // namespace

bool available() { return api() != nullptr; }

size_t version() { return api() ? api()->get_version() : 0; }

bool has_plan(const CudnnConvShape& shape, int plan) {
  std::lock_guard lock(registry().mutex);
  return plan < kMaxPlans && finalize_up_to(plans_for(shape), plan);
}

size_t workspace_bytes(const CudnnConvShape& shape, int plan) {
  std::lock_guard lock(registry().mutex);
  Plans& p = plans_for(shape);
  return plan < kMaxPlans && finalize_up_to(p, plan) ? p.workspace[plan] : 0;
}

void run(const CudnnConvShape& shape, int plan, const CudnnConvTensors& t, cudaStream_t stream) {
  std::lock_guard lock(registry().mutex);
  Plans& p = plans_for(shape);
  if (plan >= kMaxPlans || !finalize_up_to(p, plan)) fail("[cuda] cuDNN: no plan {} for this conv", plan);
  const cudnnHandle_t handle = p.handle;
  check(api()->set_stream(handle, stream), "set stream");
  std::vector<int64_t> uids{kX, kW, kY};
  std::vector<void*> ptrs{const_cast<void*>(t.x), const_cast<void*>(t.w), t.y};
  if (shape.bias) {
    uids.push_back(kBias);
    ptrs.push_back(const_cast<float*>(t.bias));
  }
  if (shape.residual) {
    uids.push_back(kResidual);
    ptrs.push_back(const_cast<void*>(t.residual));
  }
  const auto n = static_cast<int64_t>(uids.size());
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), n)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs.data(), n)
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &t.workspace)
      .finalize();
  check(api()->execute(handle, p.plans[plan].get(), pack.get()), "execute");
}

}  // namespace kiln::cuda::cudnn_conv

#else  // built without cuDNN's headers: no cuDNN variants

namespace kiln::cuda::cudnn_conv {

bool available() { return false; }
size_t version() { return 0; }
bool has_plan(const CudnnConvShape&, int) { return false; }
size_t workspace_bytes(const CudnnConvShape&, int) { return 0; }
void run(const CudnnConvShape&, int, const CudnnConvTensors&, cudaStream_t) {
  fail("[cuda] kiln was built without cuDNN");
}

}  // namespace kiln::cuda::cudnn_conv

#endif
