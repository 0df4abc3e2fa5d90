// cuBLASLt works on column-major matrices; a row-major matrix is the column-major view of its
// transpose. So c = op(a) op(b) (row-major) is computed as c^T = op(b)^T op(a)^T (column-major):
// cuBLASLt's A is our b, its B our a, its m and n our n and m, and our transposes carry over
// (b stored [k, n] row-major is already op(b)^T = [n, k] column-major, so trans_b = false is
// cuBLASLt's N; likewise a).
//
// cuBLASLt is opened with dlopen when the first CublasLtGemm is made (a CUDA kernel that may
// use it) rather than linked: loading it costs a process about 210 MB of resident memory
// (measured: an empty program linked with it), which every CPU-only use of kiln would pay for
// nothing.
#include "backends/cuda/cublaslt_gemm.h"

#include <dlfcn.h>

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

struct Api {
  decltype(&cublasLtGetVersion) get_version = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

// The library of the major version kiln was built against, opened once, or nullptr with the
// loader's reason in *why (making a CublasLtGemm then fails with it).
const Api* loaded_api(const std::string** why) {
  static std::string problem;
  static const Api* loaded = []() -> const Api* {
    const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      problem = why ? why : soname + " could not be opened";
      return nullptr;
    }
    static Api a;
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && problem.empty()) problem = soname + " has no " + name;
    };
    load(a.get_version, "cublasLtGetVersion");
    load(a.status_string, "cublasLtGetStatusString");
    load(a.create, "cublasLtCreate");
    load(a.destroy, "cublasLtDestroy");
    load(a.desc_create, "cublasLtMatmulDescCreate");
    load(a.desc_destroy, "cublasLtMatmulDescDestroy");
    load(a.desc_set, "cublasLtMatmulDescSetAttribute");
    load(a.layout_create, "cublasLtMatrixLayoutCreate");
    load(a.layout_destroy, "cublasLtMatrixLayoutDestroy");
    load(a.layout_set, "cublasLtMatrixLayoutSetAttribute");
    load(a.preference_create, "cublasLtMatmulPreferenceCreate");
    load(a.preference_destroy, "cublasLtMatmulPreferenceDestroy");
    load(a.preference_set, "cublasLtMatmulPreferenceSetAttribute");
    load(a.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    load(a.matmul, "cublasLtMatmul");
    return problem.empty() ? &a : nullptr;
  }();
  *why = &problem;
  return loaded;
}

const Api& api() {
  const std::string* problem = nullptr;
  const Api* loaded = loaded_api(&problem);
  KILN_CHECK(loaded, "[cuda] cuBLASLt could not be loaded: {}", *problem);
  return *loaded;
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) fail("[cuda] cuBLASLt {}: {}", what, api().status_string(status));
}

}  // namespace

bool CublasLtGemm::available() {
  const std::string* problem = nullptr;
  return loaded_api(&problem) != nullptr;
}

size_t CublasLtGemm::version() {
  const std::string* problem = nullptr;
  const Api* loaded = loaded_api(&problem);
  return loaded ? loaded->get_version() : 0;
}

struct CublasLtGemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A, B and C (also D)
  cublasLtMatmulPreference_t preference = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos;  // the heuristic's, best first
  ~Plan() {
    if (preference) api().preference_destroy(preference);
    for (cublasLtMatrixLayout_t l : {a, b, c})
      if (l) api().layout_destroy(l);
    if (op) api().desc_destroy(op);
  }
};

namespace {

// The largest power of two up to 256 that divides the address of every matrix of the batch.
uint32_t alignment(const void* p, int64_t stride_bytes) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(p) | static_cast<uint64_t>(stride_bytes) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

cudaDataType_t cuda_type(DType t) { return t == DType::F16 ? CUDA_R_16F : CUDA_R_32F; }

void set_batch(cublasLtMatrixLayout_t layout, int32_t batch, int64_t stride) {
  check(api().layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch), "batch count");
  check(api().layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride), "batch stride");
}

}  // namespace

CublasLtGemm::CublasLtGemm(size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  check(api().create(&handle_), "create");
  if (workspace_bytes_) KILN_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  cudaFree(workspace_);
  if (handle_) api().destroy(handle_);
}

const CublasLtGemm::Plan& CublasLtGemm::plan_for(const Key& s) {
  auto it = plans_.find(s);
  if (it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  const cudaDataType_t type = cuda_type(s.dtype), out_type = s.out_f32 ? CUDA_R_32F : type;
  const Api& lt = api();
  check(lt.desc_create(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor");
  if (s.bias || s.relu) {
    const cublasLtEpilogue_t epilogue = s.bias && s.relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                        : s.bias         ? CUBLASLT_EPILOGUE_BIAS
                                                         : CUBLASLT_EPILOGUE_RELU;
    check(lt.desc_set(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "epilogue");
  }
  const cublasOperation_t ta = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(lt.desc_set(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transpose A");
  check(lt.desc_set(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transpose B");
  // Each layout is the stored matrix, column-major: rows are our columns.
  check(lt.layout_create(&p->a, type, s.trans_b ? s.k : s.n, s.trans_b ? s.n : s.k, s.ldb), "layout A");
  check(lt.layout_create(&p->b, type, s.trans_a ? s.m : s.k, s.trans_a ? s.k : s.m, s.lda), "layout B");
  check(lt.layout_create(&p->c, out_type, s.n, s.m, s.ldc), "layout C");
  const auto batch = static_cast<int32_t>(s.batch);
  set_batch(p->a, batch, s.stride_b);
  set_batch(p->b, batch, s.stride_a);
  set_batch(p->c, batch, s.stride_c);
  check(lt.preference_create(&p->preference), "preference");
  const uint64_t workspace = s.workspace_bytes;
  check(lt.preference_set(p->preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
        "workspace");
  // The heuristic assumes 256-byte aligned matrices unless told otherwise (cuBLASLt's A is our b).
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, s.align[1]},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, s.align[0]},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, s.align[2]},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, s.align[2]}};
  for (const auto& [attribute, value] : aligns)
    check(lt.preference_set(p->preference, attribute, &value, sizeof value), "alignment");
  cublasLtMatmulHeuristicResult_t results[kMaxAlgorithms]{};
  int found = 0;
  // "Not supported" is the heuristic's way of saying it has none.
  const cublasStatus_t status =
      lt.heuristic(handle_, p->op, p->a, p->b, p->c, p->c, p->preference, kMaxAlgorithms, results, &found);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED)
    found = 0;
  else
    check(status, "heuristic");
  for (int i = 0; i < found; ++i) p->algos.push_back(results[i].algo);  // none: algorithms() says 0
  return *plans_.emplace(s, std::move(p)).first->second;
}

void CublasLtGemm::check_shape(const GemmShape& s) {
  KILN_CHECK(s.dtype == DType::F32 || s.dtype == DType::F16, "[cuda] cuBLASLt GEMM of {}: F32 or F16 only",
             dtype_name(s.dtype));
  KILN_CHECK(s.m >= 0 && s.n >= 0 && s.k >= 1 && s.batch >= 0 && s.batch <= std::numeric_limits<int32_t>::max() &&
                 s.stride_a >= 0 && s.stride_b >= 0 && s.stride_c >= 0,
             "[cuda] cuBLASLt GEMM of m={} n={} k={} batch={}: sizes or batch strides out of range", s.m, s.n, s.k,
             s.batch);
  KILN_CHECK(s.lda >= std::max<int64_t>(1, s.trans_a ? s.m : s.k) &&
                 s.ldb >= std::max<int64_t>(1, s.trans_b ? s.k : s.n) && s.ldc >= std::max<int64_t>(1, s.n),
             "[cuda] cuBLASLt GEMM of m={} n={} k={}: row strides lda={} ldb={} ldc={} too small", s.m, s.n, s.k, s.lda,
             s.ldb, s.ldc);
}

CublasLtGemm::Key CublasLtGemm::key_of(const GemmShape& s, const void* a, const void* b, const void* c,
                                       const void* c_in, size_t workspace_bytes) {
  const auto size = static_cast<int64_t>(dtype_size(s.dtype));
  const int64_t batched = s.batch > 1 ? size : 0;  // strides move nothing in a batch of one
  const int64_t c_batched = s.batch > 1 ? (s.out_f32 ? 4 : size) : 0;
  const std::array<uint32_t, 3> align = {
      alignment(a, s.stride_a * batched), alignment(b, s.stride_b * batched),
      std::min(alignment(c, s.stride_c * c_batched), alignment(c_in, s.stride_c * c_batched))};
  return {s.dtype, s.m,        s.n,        s.k,        s.trans_a, s.trans_b, s.lda,  s.ldb,  s.ldc,
          s.batch, s.stride_a, s.stride_b, s.stride_c, align,     s.out_f32, s.bias, s.relu, workspace_bytes};
}

int CublasLtGemm::algorithms(const GemmShape& s, const void* a, const void* b, const void* c,
                             const GemmExtras& extras) {
  check_shape(s);
  if (s.m == 0 || s.n == 0 || s.batch == 0) return 1;
  const size_t workspace_bytes = extras.workspace ? extras.workspace_bytes : workspace_bytes_;
  const void* c_in = extras.c_in ? extras.c_in : c;
  return static_cast<int>(plan_for(key_of(s, a, b, c, c_in, workspace_bytes)).algos.size());
}

void CublasLtGemm::gemm(const GemmShape& s, const void* a, const void* b, void* c, cudaStream_t stream,
                        const GemmExtras& extras) {
  check_shape(s);
  KILN_CHECK(s.bias == (extras.bias != nullptr), "[cuda] cuBLASLt GEMM: a bias epilogue needs a bias, and only it");
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  const void* c_in = extras.c_in ? extras.c_in : c;
  void* workspace = extras.workspace ? extras.workspace : workspace_;
  const size_t workspace_bytes = extras.workspace ? extras.workspace_bytes : workspace_bytes_;
  const Plan& p = plan_for(key_of(s, a, b, c, c_in, workspace_bytes));
  KILN_CHECK(!p.algos.empty(), "[cuda] cuBLASLt has no algorithm for a {} GEMM of m={} n={} k={} batch={}",
             dtype_name(s.dtype), s.m, s.n, s.k, s.batch);
  KILN_CHECK(extras.algorithm >= 0 && extras.algorithm < static_cast<int>(p.algos.size()),
             "[cuda] cuBLASLt GEMM: algorithm {} of {}", extras.algorithm, p.algos.size());
  if (s.bias)  // per call: a plan is kept per shape, and a call of the same shape may bring another bias
    check(api().desc_set(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &extras.bias, sizeof extras.bias), "bias");
  check(api().matmul(handle_, p.op, &s.alpha, b, p.a, a, p.b, &s.beta, c_in, p.c, c, p.c,
                     &p.algos[static_cast<size_t>(extras.algorithm)], workspace, workspace_bytes, stream),
        "matmul");
}

}  // namespace kiln
