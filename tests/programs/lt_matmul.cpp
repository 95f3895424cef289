// A cuBLASLt user as PyTorch's at::cuda::blas is one (gemm_and_bias, bgemm with cuBLASLt preferred):
// for each matmul it builds a matmul descriptor (fp32 compute and scale, A transposed, a bias
// epilogue), four bf16 layouts and a preference with a workspace limit, asks the heuristics for
// one algorithm and runs it; then destroys everything (the next call's descriptors come back at
// the same addresses with other contents). Against the cuBLASLt double.
//
//   lt_matmul [--tokens N,N,...] [--features IN,OUT] [--workspace BYTES] [--batched B]
//             [--no-algo] [--offers K]
// --tokens: one Linear forward per value (the activations' rows: batch x sequence length);
// --batched: also one strided-batched matmul of B matrices per value (no epilogue);
// --no-algo: also one matmul per value with no algorithm (cuBLASLt chooses itself);
// --offers: ask the heuristics for K algorithms and run the last (an autotuner's sweep).
// Prints one line per matmul: the tokens, the algorithm run (-1: none given) and the status
// (and "create STATUS" first when no handle could be created: the real library without a GPU).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace {

struct Options {
  std::vector<uint64_t> tokens = {512, 1024};
  uint64_t in = 768, out = 3072;
  uint64_t workspace = 32u << 20;
  int batched = 0;
  bool no_algo = false;
  int offers = 1;
};

std::vector<uint64_t> list(const char* s) {
  std::vector<uint64_t> v;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    v.push_back(strtoull(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p) break;
  }
  return v;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--no-algo") {
      o->no_algo = true;
    } else if (next == nullptr) {
      return false;
    } else if (a == "--tokens") {
      o->tokens = list(argv[++i]);
    } else if (a == "--features") {
      auto f = list(argv[++i]);
      if (f.size() != 2) return false;
      o->in = f[0];
      o->out = f[1];
    } else if (a == "--workspace") {
      o->workspace = strtoull(argv[++i], nullptr, 10);
    } else if (a == "--batched") {
      o->batched = atoi(argv[++i]);
    } else if (a == "--offers") {
      o->offers = atoi(argv[++i]);
    } else {
      return false;
    }
  }
  return o->offers >= 1 && o->offers <= 8;
}

char g_memory[64];  // the "device" pointers: any distinct, aligned addresses do for the double
void* dev(int i) { return g_memory + 16 * (i % 4); }

struct Matmul {
  uint64_t m, n, k;
  int batch = 1;
  bool transa = true;
  uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
};

// One matmul as PyTorch makes it: descriptors, heuristics (unless no_algo), the matmul, cleanup.
int run(cublasLtHandle_t h, const Options& o, const Matmul& mm, bool no_algo) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  int32_t ta = mm.transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &mm.epilogue, sizeof mm.epilogue);
  if (mm.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    const void* bias = dev(3);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  // Column-major: A is k x m stored (transposed to m x k), B k x n, C and D m x n.
  cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, mm.transa ? mm.k : mm.m, mm.transa ? mm.m : mm.k,
                             int64_t(mm.transa ? mm.k : mm.m));
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, mm.k, mm.n, int64_t(mm.k));
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, mm.m, mm.n, int64_t(mm.m));
  if (mm.batch > 1) {
    int64_t offsets[3] = {int64_t(mm.m * mm.k), int64_t(mm.k * mm.n), int64_t(mm.m * mm.n)};
    cublasLtMatrixLayout_t ls[3] = {la, lb, lc};
    for (int i = 0; i < 3; ++i) {
      cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &mm.batch, sizeof mm.batch);
      cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offsets[i],
                                       sizeof offsets[i]);
    }
  }
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &o.workspace,
                                       sizeof o.workspace);
  cublasLtMatmulHeuristicResult_t results[8] = {};
  int returned = 0;
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  const cublasLtMatmulAlgo_t* algo = nullptr;
  if (!no_algo) {
    s = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, o.offers, results, &returned);
    if (s == CUBLAS_STATUS_SUCCESS && returned > 0) algo = &results[returned - 1].algo;
  }
  float alpha = 1, beta = 0;
  int32_t algo_id = -1;
  if (algo != nullptr) {
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof algo_id, nullptr);
  }
  if (s == CUBLAS_STATUS_SUCCESS) {
    size_t ws = algo != nullptr ? results[returned - 1].workspaceSize : 0;
    s = cublasLtMatmul(h, desc, &alpha, dev(0), la, dev(1), lb, &beta, dev(2), lc, dev(2), lc, algo,
                       ws > 0 ? dev(0) : nullptr, ws, nullptr);
  }
  printf("%llu %d %d\n", (unsigned long long)mm.n, algo_id, int(s));
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  return s == CUBLAS_STATUS_SUCCESS ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    fprintf(stderr, "usage: lt_matmul [--tokens N,...] [--features IN,OUT] [--workspace BYTES] [--batched B] "
                    "[--no-algo] [--offers K]\n");
    return 2;
  }
  int device = -1;
  cudaGetDevice(&device);  // the runtime the program uses, as PyTorch's
  // Without a GPU the real library cannot create a handle: the calls go on without one (and
  // fail), so that what the shim reads of the descriptors through the real getters is checked.
  cublasLtHandle_t h = nullptr;
  cublasStatus_t created = cublasLtCreate(&h);
  if (created != CUBLAS_STATUS_SUCCESS) printf("create %d\n", int(created));
  int failed = created == CUBLAS_STATUS_SUCCESS ? 0 : 1;
  for (uint64_t tokens : o.tokens) {
    failed += run(h, o, Matmul{o.out, tokens, o.in}, false);
    if (o.batched > 1) {
      Matmul bmm{tokens, tokens, 64, o.batched, false, CUBLASLT_EPILOGUE_DEFAULT};
      failed += run(h, o, bmm, false);
    }
    if (o.no_algo) failed += run(h, o, Matmul{o.out, tokens, o.in}, true);
  }
  if (h != nullptr) cublasLtDestroy(h);
  return failed == 0 ? 0 : 1;
}
