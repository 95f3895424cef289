// What cuBLASLt's calls record (cublaslt_hooks.h, issue 33): each matmul's problem as a typed
// problem (trace::ProblemOp::kBlasLtMatmul: transposes, compute and scale types, epilogue, the four
// matrices' types, sizes and strides), read back from the descriptors through cuBLASLt's own
// attribute getters at the call (PyTorch builds its descriptors anew for each call, so nothing is
// mirrored); the heuristics' offers as algorithm results (each with its configuration as a knob
// set and its workspace); and a matmul's algorithm (its id as the engine, its configuration as
// knobs), workspace and stream.
//
// Cost per matmul: about 35 attribute reads of the real library and two per-thread cache lookups
// (problems, algorithms); a problem or an algorithm's configuration is interned once per distinct
// set of values (cublaslt_capture.cpp; measured in docs/dev/performance.md).
#pragma once

#include "cublaslt_abi.h"
#include "hook.h"
#include "process_info.h"

namespace cuprobe::shim {

template <>
struct LibraryTraits<trace::Library::kCublasLt> {
  static constexpr cublasStatus_t kMissing = CUBLAS_STATUS_NOT_INITIALIZED;
  static constexpr cublasStatus_t kProbe = CUBLAS_STATUS_NOT_SUPPORTED;  // required by Interceptor
  static bool ok(cublasStatus_t r) { return r == CUBLAS_STATUS_SUCCESS; }
  static int device(ThreadState& t) { return current_device(t); }
  // The first cuBLASLt event written also records cuBLASLt's version.
  static void on_event() { note_cublaslt_library(); }
};

// The matmul problem the descriptors state, interned (0 when a descriptor could not be read).
uint32_t blaslt_problem(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d);
// An algorithm's id (-1 unknown) and its configuration as an interned knob set (0 none).
uint32_t blaslt_algo(const cublasLtMatmulAlgo_t* algo, int64_t* id);
// The first n heuristic results as an AlgoResultsRecord on the calling thread; its id. *best:
// the first result's algorithm id (-1 none).
uint32_t blaslt_results(const cublasLtMatmulHeuristicResult_t* results, int n, int64_t* best);
// The preference's workspace limit (CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES), 0 unknown.
uint64_t blaslt_max_workspace(cublasLtMatmulPreference_t pref);
// Smallest power-of-two alignment of the four matrices' addresses (nullptrs ignored), <= 256.
uint32_t blaslt_alignment(const void* a, const void* b, const void* c, const void* d);

template <>
struct Capture<ApiId::cublasLtCreate> {
  static constexpr const char* kFields = "handle:p";
  static void after(CallWriter& w, cublasStatus_t r, cublasLtHandle_t* h) {
    w.p(r == CUBLAS_STATUS_SUCCESS && h ? static_cast<const void*>(*h) : nullptr);
  }
};

template <>
struct Capture<ApiId::cublasLtMatmulAlgoGetHeuristic> {
  static constexpr const char* kFields = "problem:q,requested:i,returned:i,best:i,results:r,max_workspace:u";
  static void after(CallWriter& w, cublasStatus_t r, cublasLtHandle_t, cublasLtMatmulDesc_t op,
                    cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                    cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,
                    cublasLtMatmulHeuristicResult_t* results, int* returned) {
    int n = r == CUBLAS_STATUS_SUCCESS && returned != nullptr && results != nullptr ? *returned : 0;
    if (n > requested) n = requested;
    int64_t best = -1;
    uint32_t offered = n > 0 ? blaslt_results(results, n, &best) : 0;
    w.u(blaslt_problem(op, a, b, c, d));
    w.i(requested);
    w.i(n);
    w.i(best);
    w.u(offered);
    w.u(blaslt_max_workspace(pref));
  }
};

template <>
struct Capture<ApiId::cublasLtMatmul> {
  static constexpr const char* kFields = "problem:q,engine:i,knobs:k,workspace:u,ws_ptr:p,align:u";
  static void after(CallWriter& w, cublasStatus_t, cublasLtHandle_t, cublasLtMatmulDesc_t op, const void*,
                    const void* A, cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void*,
                    const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                    const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_size, cudaStream_t s) {
    int64_t id = -1;
    uint32_t knobs = algo != nullptr ? blaslt_algo(algo, &id) : 0;
    w.u(blaslt_problem(op, a, b, c, d));
    w.i(id);
    w.u(knobs);
    w.u(workspace_size);
    w.p(workspace);
    w.u(blaslt_alignment(A, B, C, D));
    w.stream(s);
  }
};

}  // namespace cuprobe::shim
