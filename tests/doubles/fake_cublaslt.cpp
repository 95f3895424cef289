// Test double of libcublasLt.so.13 (same soname), as far as the shim hooks and reads it: the
// functions of the shim's cuBLASLt hook table with cublasLt.h's signatures, the descriptor
// functions an application uses to state a matmul (layouts, matmul descriptors, preferences:
// create, set, get, destroy) and the getters the shim reads them back with.
//
// Descriptors keep exactly what was set; getters check the size as cuBLASLt does
// (CUBLAS_STATUS_INVALID_VALUE for a buffer of another size). The heuristics offer up to four
// algorithms for any valid problem, decided by its sizes: algorithm 21 (tile 20, stages 8, no
// workspace), 6 (tile 15, split-K 4 with a workspace of m*n*4 bytes), 31 (tile 18, cluster shape
// 2), 40 (a custom option); those needing more workspace than the preference allows are left out,
// as cuBLASLt leaves them out. A matmul checks that the four layouts agree with the transposes
// and that a given algorithm's workspace was supplied; nothing is computed.
#include <stdint.h>
#include <string.h>

#include <cublasLt.h>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct cublasLtContext {
  int device;
};

namespace {

struct Layout {
  uint32_t type;
  int32_t order = 0;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t batch_offset = 0;
};

struct Desc {
  int32_t compute, scale;
  int32_t transa = 0, transb = 0;
  uint32_t epilogue = 1;
  int32_t bias_type = -1;
  int8_t fast_accum = 0;
};

struct Pref {
  uint64_t max_workspace = 0;
};

Layout* layout(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout*>(l); }
Desc* desc(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc*>(d); }
Pref* pref(cublasLtMatmulPreference_t p) { return reinterpret_cast<Pref*>(p); }

template <typename T>
cublasStatus_t put(T& field, const void* buf, size_t size) {
  if (buf == nullptr || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t get(const T& field, void* buf, size_t size, size_t* written) {
  if (buf == nullptr && written != nullptr) {
    *written = sizeof(T);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, &field, sizeof(T));
  if (written != nullptr) *written = sizeof(T);
  return CUBLAS_STATUS_SUCCESS;
}

// An algorithm as this double encodes it in cublasLtMatmulAlgo_t::data.
enum AlgoSlot { kId, kTile, kSplitK, kStages, kCluster, kCustom, kWorkspace, kMagic };
constexpr uint64_t kAlgoMagic = 0xfa4eb1a5u;

// op(A) is m x k, op(B) k x n, C and D m x n (each as its layout states it, transposed or not).
bool sizes(const Desc& d, const Layout& a, const Layout& b, const Layout& c, const Layout& o, uint64_t* m,
           uint64_t* n) {
  uint64_t am = d.transa ? a.cols : a.rows, ak = d.transa ? a.rows : a.cols;
  uint64_t bk = d.transb ? b.cols : b.rows, bn = d.transb ? b.rows : b.cols;
  *m = am;
  *n = bn;
  return ak == bk && c.rows == am && c.cols == bn && o.rows == am && o.cols == bn && a.batch == o.batch &&
         b.batch == o.batch && c.batch == o.batch;
}

}  // namespace

FAKE_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasLtContext{0};
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT size_t cublasLtGetVersion(void) { return 130200; }

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows,
                                                      uint64_t cols, int64_t ld) {
  if (l == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* v = new Layout;
  v->type = uint32_t(type);
  v->rows = rows;
  v->cols = cols;
  v->ld = ld;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(v);
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete layout(l);
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                            cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                            size_t size) {
  if (l == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  Layout& v = *layout(l);
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return put(v.type, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return put(v.order, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return put(v.rows, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return put(v.cols, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_LD: return put(v.ld, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return put(v.batch, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return put(v.batch_offset, buf, size);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l,
                                                            cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                            size_t size, size_t* written) {
  if (l == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const Layout& v = *layout(l);
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return get(v.type, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return get(v.order, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return get(v.rows, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return get(v.cols, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_LD: return get(v.ld, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return get(v.batch, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return get(v.batch_offset, buf, size, written);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                                    cudaDataType_t scale) {
  if (d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* v = new Desc;
  v->compute = int32_t(compute);
  v->scale = int32_t(scale);
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(v);
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete desc(d);
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                                          const void* buf, size_t size) {
  if (d == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  Desc& v = *desc(d);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return put(v.compute, buf, size);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return put(v.scale, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSA: return put(v.transa, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB: return put(v.transb, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return put(v.epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return put(v.bias_type, buf, size);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return put(v.fast_accum, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: {
      const void* p;
      return put(p, buf, size);
    }
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                                          void* buf, size_t size, size_t* written) {
  if (d == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const Desc& v = *desc(d);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return get(v.compute, buf, size, written);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return get(v.scale, buf, size, written);
    case CUBLASLT_MATMUL_DESC_TRANSA: return get(v.transa, buf, size, written);
    case CUBLASLT_MATMUL_DESC_TRANSB: return get(v.transb, buf, size, written);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return get(v.epilogue, buf, size, written);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return get(v.bias_type, buf, size, written);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return get(v.fast_accum, buf, size, written);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  if (p == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new Pref);
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete pref(p);
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                                cublasLtMatmulPreferenceAttributes_t attr,
                                                                const void* buf, size_t size) {
  if (p == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) return put(pref(p)->max_workspace, buf, size);
  return CUBLAS_STATUS_INVALID_VALUE;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t p,
                                                                cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                                size_t size, size_t* written) {
  if (p == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) return get(pref(p)->max_workspace, buf, size, written);
  return CUBLAS_STATUS_INVALID_VALUE;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                                          cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                          cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                          cublasLtMatmulPreference_t p, int requested,
                                                          cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!op || !a || !b || !c || !d || !p || requested <= 0 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  uint64_t m = 0, n = 0;
  if (!sizes(*desc(op), *layout(a), *layout(b), *layout(c), *layout(d), &m, &n)) return CUBLAS_STATUS_INVALID_VALUE;
  struct Offer {
    uint64_t id, tile, splitk, stages, cluster, custom, workspace;
  };
  const Offer offers[] = {{21, 20, 1, 8, 0, 0, 0},
                          {6, 15, 4, 0, 0, 0, m * n * 4},
                          {31, 18, 1, 0, 2, 0, 0},
                          {40, 20, 1, 8, 0, 1, 1u << 20}};
  int k = 0;
  for (const Offer& o : offers) {
    if (k == requested) break;
    if (o.workspace > pref(p)->max_workspace) continue;
    cublasLtMatmulHeuristicResult_t& r = results[k++];
    memset(&r, 0, sizeof r);
    r.algo.data[kId] = o.id;
    r.algo.data[kTile] = o.tile;
    r.algo.data[kSplitK] = o.splitk;
    r.algo.data[kStages] = o.stages;
    r.algo.data[kCluster] = o.cluster;
    r.algo.data[kCustom] = o.custom;
    r.algo.data[kWorkspace] = o.workspace;
    r.algo.data[kMagic] = kAlgoMagic;
    r.workspaceSize = o.workspace;
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
  }
  *returned = k;
  return k > 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                                cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                                size_t size, size_t* written) {
  if (algo == nullptr || algo->data[kMagic] != kAlgoMagic) return CUBLAS_STATUS_INVALID_VALUE;
  const uint64_t* v = algo->data;
  switch (attr) {
    case CUBLASLT_ALGO_CONFIG_ID: return get(int32_t(v[kId]), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_TILE_ID: return get(uint32_t(v[kTile]), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_SPLITK_NUM: return get(int32_t(v[kSplitK]), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: return get(uint32_t(v[kSplitK] > 1 ? 2 : 0), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING: return get(uint32_t(0), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION: return get(uint32_t(v[kCustom]), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_STAGES_ID: return get(uint32_t(v[kStages]), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID: return get(uint16_t(0), buf, size, written);
    case CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID: return get(uint16_t(v[kCluster]), buf, size, written);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

FAKE_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t op, const void* alpha,
                                          const void* A, cublasLtMatrixLayout_t a, const void* B,
                                          cublasLtMatrixLayout_t b, const void* beta, const void* C,
                                          cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                                          const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_size,
                                          cudaStream_t) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!op || !alpha || !beta || !A || !B || !C || !D || !a || !b || !c || !d) return CUBLAS_STATUS_INVALID_VALUE;
  uint64_t m = 0, n = 0;
  if (!sizes(*desc(op), *layout(a), *layout(b), *layout(c), *layout(d), &m, &n)) return CUBLAS_STATUS_INVALID_VALUE;
  if (algo != nullptr) {
    if (algo->data[kMagic] != kAlgoMagic) return CUBLAS_STATUS_INVALID_VALUE;
    if (algo->data[kWorkspace] > workspace_size || (workspace_size > 0 && workspace == nullptr)) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}
