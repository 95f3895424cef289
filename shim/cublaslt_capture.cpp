// cuBLASLt problems, algorithms and heuristic results for the captures of capture_cublaslt.h.
//
// The descriptors are read through cuBLASLt's own getters (cublasLtMatrixLayoutGetAttribute,
// cublasLtMatmulDescGetAttribute, ...), resolved once from the copy of libcublasLt the calls go to.
// They are plain reads of the descriptor (no device work, no lock). Each attribute is asked with
// the exact size cublasLt.h gives it; one the library refuses (an older cuBLASLt without
// CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, say) keeps its documented default. Written here rather than
// taken from a library: there is none for cuBLASLt's descriptors, and the problem format is
// cuprobe's own (schema/cuprobe/problem.h).
#include <string.h>

#include "capture_cublaslt.h"
#include "capture_cudnn_detail.h"
#include "fork.h"
#include "problem_table.h"

namespace cuprobe::shim {

namespace {

using LayoutGet = cublasStatus_t (*)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void*, size_t, size_t*);
using DescGet = cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void*, size_t, size_t*);
using PrefGet = cublasStatus_t (*)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, void*, size_t,
                                   size_t*);
using AlgoGet = cublasStatus_t (*)(const cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoConfigAttributes_t, void*, size_t,
                                   size_t*);

// The real getters, resolved once (nullptr where the library has none: nothing is read).
template <typename Fn>
Fn getter(Fn* slot, uint32_t* tried, const char* name) {
  if (!__atomic_load_n(tried, __ATOMIC_ACQUIRE)) {
    Fn fn = reinterpret_cast<Fn>(resolve_in_library(trace::Library::kCublasLt, name));
    __atomic_store_n(slot, fn, __ATOMIC_RELAXED);
    __atomic_store_n(tried, 1u, __ATOMIC_RELEASE);
  }
  return __atomic_load_n(slot, __ATOMIC_RELAXED);
}
LayoutGet g_layout_get;
DescGet g_desc_get;
PrefGet g_pref_get;
AlgoGet g_algo_get;
uint32_t g_layout_tried, g_desc_tried, g_pref_tried, g_algo_tried;

template <typename T, typename Fn, typename Obj, typename Attr>
T read_attr(Fn fn, Obj obj, Attr attr, T dflt) {
  T v = dflt;
  size_t written = 0;
  if (fn == nullptr || obj == nullptr || fn(obj, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS ||
      written != sizeof v) {
    return dflt;
  }
  return v;
}

// What a layout states, as read (the raw key of the problem cache and the problem's tensor).
struct LayoutValues {
  uint32_t type;
  int32_t order;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch;
  int32_t pad;
  int64_t batch_offset;
};

bool read_layout(cublasLtMatrixLayout_t l, LayoutValues* v) {
  LayoutGet fn = getter(&g_layout_get, &g_layout_tried, "cublasLtMatrixLayoutGetAttribute");
  *v = LayoutValues{};
  if (fn == nullptr || l == nullptr) return false;
  v->type = read_attr<uint32_t>(fn, l, CUBLASLT_MATRIX_LAYOUT_TYPE, UINT32_MAX);
  if (v->type == UINT32_MAX) return false;
  v->order = read_attr<int32_t>(fn, l, CUBLASLT_MATRIX_LAYOUT_ORDER, 0);
  v->rows = read_attr<uint64_t>(fn, l, CUBLASLT_MATRIX_LAYOUT_ROWS, 0);
  v->cols = read_attr<uint64_t>(fn, l, CUBLASLT_MATRIX_LAYOUT_COLS, 0);
  v->ld = read_attr<int64_t>(fn, l, CUBLASLT_MATRIX_LAYOUT_LD, 0);
  v->batch = read_attr<int32_t>(fn, l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1);
  v->batch_offset = v->batch > 1 ? read_attr<int64_t>(fn, l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 0) : 0;
  return true;
}

struct DescValues {
  int32_t compute, scale, transa, transb;
  uint32_t epilogue;
  int32_t bias_type;
  int8_t fast_accum;
  int8_t pad[7];
};

bool read_desc(cublasLtMatmulDesc_t op, DescValues* v) {
  DescGet fn = getter(&g_desc_get, &g_desc_tried, "cublasLtMatmulDescGetAttribute");
  *v = DescValues{};
  if (fn == nullptr || op == nullptr) return false;
  v->compute = read_attr<int32_t>(fn, op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, -1);
  if (v->compute == -1) return false;
  v->scale = read_attr<int32_t>(fn, op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, -1);
  v->transa = read_attr<int32_t>(fn, op, CUBLASLT_MATMUL_DESC_TRANSA, 0);
  v->transb = read_attr<int32_t>(fn, op, CUBLASLT_MATMUL_DESC_TRANSB, 0);
  v->epilogue = read_attr<uint32_t>(fn, op, CUBLASLT_MATMUL_DESC_EPILOGUE, 1);
  v->bias_type = read_attr<int32_t>(fn, op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, -1);
  v->fast_accum = read_attr<int8_t>(fn, op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, 0);
  return true;
}

// cudaDataType_t (library_types.h) as the cudnnDataType_t a problem's tensors carry; -1 for a
// type cuDNN has no name for (complex, 4- and 16-bit integers).
int8_t cudnn_dtype(uint32_t t) {
  switch (t) {
    case 0: return 0;    // CUDA_R_32F -> CUDNN_DATA_FLOAT
    case 1: return 1;    // CUDA_R_64F -> DOUBLE
    case 2: return 2;    // CUDA_R_16F -> HALF
    case 3: return 3;    // CUDA_R_8I -> INT8
    case 8: return 6;    // CUDA_R_8U -> UINT8
    case 10: return 4;   // CUDA_R_32I -> INT32
    case 14: return 9;   // CUDA_R_16BF -> BFLOAT16
    case 24: return 10;  // CUDA_R_64I -> INT64
    case 28: return 12;  // CUDA_R_8F_E4M3 -> FP8_E4M3
    case 29: return 13;  // CUDA_R_8F_E5M2 -> FP8_E5M2
    case 30: return 15;  // CUDA_R_8F_UE8M0 -> FP8_E8M0
    case 33: return 16;  // CUDA_R_4F_E2M1 -> FP4_E2M1
    default: return -1;
  }
}

void layout_tensor(trace::ProblemTensor& t, trace::TensorRole role, const LayoutValues& v) {
  t.role = uint8_t(role);
  t.dtype = cudnn_dtype(v.type);
  t.nbdims = 3;
  t.layout = uint8_t(trace::Layout::kStrided);
  t.dims[0] = v.batch;
  t.dims[1] = int64_t(v.rows);
  t.dims[2] = int64_t(v.cols);
  t.strides[0] = v.batch > 1 ? v.batch_offset : 0;
  bool row = v.order == 1;  // CUBLASLT_ORDER_ROW; the tiled IMMA orders are read as columns
  t.strides[1] = row ? v.ld : 1;
  t.strides[2] = row ? 1 : v.ld;
}

struct CacheSlot {
  uint64_t key;
  uint32_t id;
  uint32_t pad;
};
constexpr uint32_t kCacheSlots = 64;
__thread CacheSlot t_cache[kCacheSlots] __attribute__((tls_model("initial-exec")));

// FNV-1a over 8-byte words (every struct hashed here is a whole number of them, padding zeroed):
// a cache key, taken at every heuristics query and matmul; byte-wise it was a tenth of the
// capture's cost on the double (docs/dev/performance.md).
uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 32;
  }
  return h;
}
static_assert(sizeof(LayoutValues) % 8 == 0 && sizeof(DescValues) % 8 == 0);

// The last algorithms read on this thread (an algorithm's bytes to its id and knob set): PyTorch
// runs the heuristics' answer at once, and the same few algorithms all run long.
struct AlgoSlot {
  uint64_t key;
  int64_t id;
  uint32_t knobs;
  uint32_t pad;
};
constexpr uint32_t kAlgoSlots = 16;
__thread AlgoSlot t_algos[kAlgoSlots] __attribute__((tls_model("initial-exec")));

void cache_after_fork() {
  memset(t_cache, 0, sizeof t_cache);
  memset(t_algos, 0, sizeof t_algos);
}
CUPROBE_FORK_CHILD_RESET(cache_after_fork);

}  // namespace

uint32_t blaslt_problem(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) {
  DescValues dv;
  LayoutValues lv[4];
  cublasLtMatrixLayout_t layouts[4] = {a, b, c, d};
  if (!read_desc(op, &dv)) return 0;
  for (int i = 0; i < 4; ++i) {
    if (!read_layout(layouts[i], &lv[i])) return 0;
  }
  uint64_t key = fnv(fnv(1469598103934665603ull, &dv, sizeof dv), lv, sizeof lv);
  key = key == 0 ? 1 : key;
  CacheSlot& slot = t_cache[key % kCacheSlots];
  if (slot.key == key && slot.id != 0) return slot.id;
  trace::ProblemDesc p{};
  p.op = uint16_t(trace::ProblemOp::kBlasLtMatmul);
  p.math_type = -1;
  const trace::TensorRole roles[4] = {trace::TensorRole::kA, trace::TensorRole::kB, trace::TensorRole::kC,
                                      trace::TensorRole::kOut};
  p.n_tensors = 4;
  for (int i = 0; i < 4; ++i) layout_tensor(p.tensors[i], roles[i], lv[i]);
  p.n_params = 7;
  p.params[0] = dv.transa;
  p.params[1] = dv.transb;
  p.params[2] = dv.compute;
  p.params[3] = dv.scale;
  p.params[4] = dv.epilogue;
  p.params[5] = dv.fast_accum != 0;
  p.params[6] = dv.bias_type;
  uint64_t hash = 0;
  uint32_t id = intern_problem(t_state, p, &hash);
  if (id != 0) slot = CacheSlot{key, id, 0};
  return id;
}

uint32_t blaslt_algo(const cublasLtMatmulAlgo_t* algo, int64_t* id) {
  AlgoGet fn = getter(&g_algo_get, &g_algo_tried, "cublasLtMatmulAlgoConfigGetAttribute");
  *id = -1;
  if (fn == nullptr || algo == nullptr) return 0;
  uint64_t key = fnv(1469598103934665603ull, algo->data, sizeof algo->data);
  key = key == 0 ? 1 : key;
  AlgoSlot& slot = t_algos[key % kAlgoSlots];
  if (slot.key == key) {
    *id = slot.id;
    return slot.knobs;
  }
  *id = read_attr<int32_t>(fn, algo, CUBLASLT_ALGO_CONFIG_ID, -1);
  if (*id < 0) return 0;
  // The configuration, by attribute number; values at their defaults (0, one split) left out.
  trace::Knob knobs[8];
  int n = 0;
  auto add = [&](cublasLtMatmulAlgoConfigAttributes_t attr, int64_t v, int64_t dflt) {
    if (v != dflt) knobs[n++] = trace::Knob{trace::kBlasKnobBase + int32_t(attr), 0, v};
  };
  add(CUBLASLT_ALGO_CONFIG_TILE_ID, read_attr<uint32_t>(fn, algo, CUBLASLT_ALGO_CONFIG_TILE_ID, 0), 0);
  add(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, read_attr<int32_t>(fn, algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1), 1);
  add(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, read_attr<uint32_t>(fn, algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, 0),
      0);
  add(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, read_attr<uint32_t>(fn, algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, 0), 0);
  add(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, read_attr<uint32_t>(fn, algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, 0), 0);
  add(CUBLASLT_ALGO_CONFIG_STAGES_ID, read_attr<uint32_t>(fn, algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, 0), 0);
  add(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, read_attr<uint16_t>(fn, algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, 0), 0);
  add(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, read_attr<uint16_t>(fn, algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, 0),
      0);
  uint32_t interned = n > 0 ? intern_knobs(t_state, knobs, n) : 0;  // already in attribute order
  if (n == 0 || interned != 0) slot = AlgoSlot{key, *id, interned, 0};
  return interned;
}

uint32_t blaslt_results(const cublasLtMatmulHeuristicResult_t* results, int n, int64_t* best) {
  if (n > trace::kMaxAlgoResults) n = trace::kMaxAlgoResults;
  // The knob sets first: each is a record of its own, written before the results that name it.
  uint32_t knobs[trace::kMaxAlgoResults];
  int64_t ids[trace::kMaxAlgoResults];
  for (int i = 0; i < n; ++i) knobs[i] = blaslt_algo(&results[i].algo, &ids[i]);
  *best = n > 0 ? ids[0] : -1;
  uint32_t size = 0;
  trace::AlgoResultsRecord* r = begin_algo_results(n, &size);
  if (r == nullptr) return 0;
  for (int i = 0; i < n; ++i) {
    // cuBLASLt's results are untimed and deterministic; a math type is cuDNN's notion (-1).
    r->results[i] = trace::AlgoResult{int32_t(ids[i]), int32_t(results[i].state), -1.0f, 1, -1, knobs[i],
                                      uint64_t(results[i].workspaceSize)};
  }
  uint32_t id = r->id;
  commit_kept(t_state, size);
  return id;
}

uint64_t blaslt_max_workspace(cublasLtMatmulPreference_t pref) {
  PrefGet fn = getter(&g_pref_get, &g_pref_tried, "cublasLtMatmulPreferenceGetAttribute");
  return read_attr<uint64_t>(fn, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 0);
}

uint32_t blaslt_alignment(const void* a, const void* b, const void* c, const void* d) {
  const void* ptrs[4] = {a, b, c, d};
  return min_alignment(ptrs, 4);
}

}  // namespace cuprobe::shim
