// Reproduces, call for call, the cuDNN backend-API traffic of a PyTorch 2.11 2-D convolution
// (aten/src/ATen/native/cudnn/Conv_v8.cpp through cudnn-frontend): tensor, convolution,
// operation and graph descriptors, instant-mode heuristics, one execution plan per engine
// config, then either the benchmark search (one shared workspace, events around each plan) or
// the heuristic pick (first plan that executes), and --steps executions of the winner, each
// with its own variant pack. Prints one "search ..." line per selection.
//
// Options: --benchmark, --bwd (also backward data and backward filter), --shapes N (problem k
// has batch 8+8k, H=W=16), --repeat K (search every problem K times in all, as after a cache
// eviction), --steps S (default 3), --limit L (plans timed at most, default 10), --iters N (runs
// of a candidate between its two event records, default 1; cudnn-frontend's autotune makes 10), --threads T
// (each thread runs everything with its own handle and stream), --copy-configs, --graph-dies-early
// (see below), --fallback (also cuDNN's fallback list, after the heuristics' configurations, as
// cudnn-frontend's generator under PyTorch asks for both), --skip-engine E (drop the heuristics'
// configurations of engine E, as PyTorch's own filters drop nondeterministic or TF32 ones),
// --step-ms M (each execution of the winner of a shape after the first is preceded by M ms of
// the job's other work: a storm that settles, so that the searches' share of the time falls),
// --alias (the variant pack gives the output the input's buffer), --configs-die-first (destroy
// the configurations before the plans, as PyTorch does: its plan cache outlives the selection),
// --sync-every N (a cudaStreamSynchronize after every N executions of a winner), --alloc-every N
// (a 1 MiB cudaMalloc and cudaFree after every N executions).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::mutex out_mu;

[[noreturn]] void die(const char* what, int code) {
  {
    std::lock_guard<std::mutex> lock(out_mu);
    std::fprintf(stderr, "frontend_search: %s failed: %d\n", what, code);
    std::fflush(stdout);
  }
  std::exit(1);
}

void ck(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) die(what, int(s));
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(what, int(e));
}

#define CK(call) ck(call, #call)

struct Options {
  bool benchmark = false;
  bool bwd = false;
  int shapes = 1;
  int repeat = 1;
  int steps = 3;
  int limit = 10;
  int iters = 1;  // executions of a candidate between its two event records (cudnn-frontend's autotune: 10)
  int threads = 1;
  bool copy_configs = false;
  bool graph_dies_early = false;
  bool fallback = false;
  int64_t skip_engine = -1;
  int step_ms = 0;
  bool alias = false;
  bool configs_die_first = false;
  int sync_every = 0;   // a cudaStreamSynchronize after every N executions (0: none)
  int alloc_every = 0;  // a 1 MiB cudaMalloc and cudaFree after every N executions (0: none)
};

enum class Kind { fwd, dgrad, wgrad };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::fwd: return "conv_fwd";
    case Kind::dgrad: return "conv_dgrad";
    case Kind::wgrad: return "conv_wgrad";
  }
  return "?";
}

cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  CK(cudnnBackendCreateDescriptor(type, &d));
  return d;
}

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         int64_t count, const void* value) {
  ck(cudnnBackendSetAttribute(d, name, type, count, value), "cudnnBackendSetAttribute");
}

cudnnBackendDescriptor_t make_tensor(const int64_t dims[4], int64_t uid) {
  int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  int64_t alignment = 16;
  cudnnBackendDescriptor_t t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  CK(cudnnBackendFinalize(t));
  return t;
}

cudnnBackendDescriptor_t make_conv() {
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t spatial = 2;
  int64_t pad[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  cudnnBackendDescriptor_t c = create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
  CK(cudnnBackendFinalize(c));
  return c;
}

// The operation of one direction; x, w and y are the tensors 'x', 'w' and 'y' (for dgrad
// x is the input gradient and y the output gradient; for wgrad w is the filter gradient).
cudnnBackendDescriptor_t make_op(Kind kind, cudnnBackendDescriptor_t conv, cudnnBackendDescriptor_t x,
                                 cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y) {
  float alpha = 1.0f, beta = 0.0f;
  cudnnBackendDescriptor_t op = nullptr;
  switch (kind) {
    case Kind::fwd:
      op = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      break;
    case Kind::dgrad:
      op = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      break;
    case Kind::wgrad:
      op = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      break;
  }
  CK(cudnnBackendFinalize(op));
  return op;
}

struct Plan {
  cudnnBackendDescriptor_t plan = nullptr;
  cudnnBackendDescriptor_t cfg = nullptr;
  int64_t workspace = 0;
};

struct Buffers {
  void* ptrs[3] = {nullptr, nullptr, nullptr};  // x, y, w, in the order of uids below
  int64_t uids[3] = {'x', 'y', 'w'};
};

bool g_alias = false;  // --alias

// One execution: a fresh variant pack, as cudnn-frontend builds for every run.
cudnnStatus_t execute(cudnnHandle_t handle, const Plan& p, const Buffers& b, void* workspace) {
  cudnnBackendDescriptor_t pack = create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  void* ptrs[3] = {b.ptrs[0], g_alias ? b.ptrs[0] : b.ptrs[1], b.ptrs[2]};
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, b.uids);
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  CK(cudnnBackendFinalize(pack));
  cudnnStatus_t s = cudnnBackendExecute(handle, p.plan, pack);
  CK(cudnnBackendDestroyDescriptor(pack));
  return s;
}

int64_t cfg_engine_index(cudnnBackendDescriptor_t cfg) {
  cudnnBackendDescriptor_t engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  CK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine));
  int64_t index = -1;
  CK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index));
  CK(cudnnBackendDestroyDescriptor(engine));
  return index;
}
int64_t engine_index(const Plan& p) { return cfg_engine_index(p.cfg); }

// One heuristics query (count, then the configurations), as cudnn-frontend's getEngineConfig
// makes it; the configurations returned are appended to `cfgs`, the heuristics descriptor to
// `heurs`.
void heuristics(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode, std::vector<cudnnBackendDescriptor_t>& cfgs,
                std::vector<cudnnBackendDescriptor_t>& heurs) {
  cudnnBackendDescriptor_t heur = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heurs.push_back(heur);
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  CK(cudnnBackendFinalize(heur));
  int64_t count = 0;
  CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<cudnnBackendDescriptor_t> got(size_t(count > 0 ? count : 0));
  for (auto& c : got) c = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t returned = 0;
  if (count > 0) {
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                got.data()));
  }
  for (int64_t i = 0; i < int64_t(got.size()); ++i) {
    if (i < returned) cfgs.push_back(got[size_t(i)]);
    else CK(cudnnBackendDestroyDescriptor(got[size_t(i)]));
  }
}

void run_problem(const Options& o, cudnnHandle_t handle, cudaStream_t stream, Kind kind, int64_t batch) {
  const int64_t hw = 16;
  int64_t xdims[4] = {batch, 64, hw, hw};
  int64_t wdims[4] = {64, 64, 3, 3};
  int64_t ydims[4] = {batch, 64, hw, hw};
  cudnnBackendDescriptor_t x = make_tensor(xdims, 'x');
  cudnnBackendDescriptor_t w = make_tensor(wdims, 'w');
  cudnnBackendDescriptor_t y = make_tensor(ydims, 'y');
  cudnnBackendDescriptor_t conv = make_conv();
  cudnnBackendDescriptor_t op = make_op(kind, conv, x, w, y);

  cudnnBackendDescriptor_t graph = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
  CK(cudnnBackendFinalize(graph));

  std::vector<cudnnBackendDescriptor_t> cfgs, heurs, dropped;
  heuristics(graph, CUDNN_HEUR_MODE_INSTANT, cfgs, heurs);
  if (o.skip_engine >= 0) {
    std::vector<cudnnBackendDescriptor_t> kept;
    for (auto c : cfgs) (cfg_engine_index(c) == o.skip_engine ? dropped : kept).push_back(c);
    cfgs = kept;
  }
  if (o.fallback) heuristics(graph, CUDNN_HEUR_MODE_FALLBACK, cfgs, heurs);
  int64_t count = int64_t(cfgs.size());
  // --copy-configs: like cudnn-frontend, rebuild each configuration from its engine fetched into
  // a descriptor of our own, so the configuration a plan uses is not the heuristics' one.
  std::vector<cudnnBackendDescriptor_t> copies;
  if (o.copy_configs) {
    for (int64_t i = 0; i < count; ++i) {
      cudnnBackendDescriptor_t engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      int64_t n = 0;
      CK(cudnnBackendGetAttribute(cfgs[size_t(i)], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                  &engine));
      cudnnBackendDescriptor_t copy = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      set(copy, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine);
      CK(cudnnBackendFinalize(copy));
      copies.push_back(engine);
      copies.push_back(copy);
      cfgs[size_t(i)] = copy;
    }
  }

  // --graph-dies-early: like PyTorch's heuristic path, destroy the heuristics and the operation
  // graph before building plans from the configurations.
  if (o.graph_dies_early) {
    for (auto h : heurs) CK(cudnnBackendDestroyDescriptor(h));
    CK(cudnnBackendDestroyDescriptor(graph));
    heurs.clear();
    graph = nullptr;
  }

  std::vector<cudnnBackendDescriptor_t> all_plans;
  std::vector<Plan> plans;
  for (int64_t i = 0; i < count; ++i) {
    cudnnBackendDescriptor_t plan = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    all_plans.push_back(plan);
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[size_t(i)]);
    if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) continue;  // e.g. NOT_SUPPORTED
    Plan p;
    p.plan = plan;
    p.cfg = cfgs[size_t(i)];
    int64_t n = 0;
    CK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                &p.workspace));
    plans.push_back(p);
  }
  if (plans.empty()) die("no execution plan finalized", 0);

  Buffers b;
  size_t elem = sizeof(float);
  CK(cudaMalloc(&b.ptrs[0], size_t(xdims[0] * xdims[1] * xdims[2] * xdims[3]) * elem));
  CK(cudaMalloc(&b.ptrs[1], size_t(ydims[0] * ydims[1] * ydims[2] * ydims[3]) * elem));
  CK(cudaMalloc(&b.ptrs[2], size_t(wdims[0] * wdims[1] * wdims[2] * wdims[3]) * elem));

  const Plan* chosen = nullptr;
  void* workspace = nullptr;
  if (o.benchmark) {
    int64_t largest = 0;
    for (const auto& p : plans) largest = p.workspace > largest ? p.workspace : largest;
    void* search_ws = nullptr;
    if (largest > 0) CK(cudaMalloc(&search_ws, size_t(largest)));
    cudaEvent_t start = nullptr, stop = nullptr;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    CK(cudaDeviceSynchronize());
    float best = 0.0f;
    int timed = 0;
    for (const auto& p : plans) {
      if (timed >= o.limit) break;
      ++timed;
      if (execute(handle, p, b, search_ws) != CUDNN_STATUS_SUCCESS) continue;  // warm-up
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(start, stream));
      cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
      for (int it = 0; it < o.iters && s == CUDNN_STATUS_SUCCESS; ++it) s = execute(handle, p, b, search_ws);
      CK(cudaEventRecord(stop, stream));
      CK(cudaEventSynchronize(stop));
      float ms = 0.0f;
      CK(cudaEventElapsedTime(&ms, start, stop));
      if (s != CUDNN_STATUS_SUCCESS) continue;
      if (chosen == nullptr || ms < best) {
        chosen = &p;
        best = ms;
      }
    }
    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(stop));
    if (search_ws != nullptr) CK(cudaFree(search_ws));
    if (chosen == nullptr) die("benchmark: no plan executed", 0);
    if (chosen->workspace > 0) CK(cudaMalloc(&workspace, size_t(chosen->workspace)));
  } else {
    for (const auto& p : plans) {
      void* ws = nullptr;
      if (p.workspace > 0) CK(cudaMalloc(&ws, size_t(p.workspace)));
      if (execute(handle, p, b, ws) == CUDNN_STATUS_SUCCESS) {
        chosen = &p;
        workspace = ws;
        break;
      }
      if (ws != nullptr) CK(cudaFree(ws));
    }
    if (chosen == nullptr) die("heuristic: no plan executed", 0);
  }

  for (int i = 0; i < o.steps; ++i) {
    if (o.step_ms > 0 && batch > 8) std::this_thread::sleep_for(std::chrono::milliseconds(o.step_ms));
    CK(execute(handle, *chosen, b, workspace));
    if (o.sync_every > 0 && (i + 1) % o.sync_every == 0) CK(cudaStreamSynchronize(stream));
    if (o.alloc_every > 0 && (i + 1) % o.alloc_every == 0) {
      void* p = nullptr;
      CK(cudaMalloc(&p, 1 << 20));
      CK(cudaFree(p));
    }
  }

  int64_t winner = engine_index(*chosen);
  {
    std::lock_guard<std::mutex> lock(out_mu);
    std::printf("search %s batch=%lld mode=%s winner_engine=%lld candidates=%zu\n", kind_name(kind),
                static_cast<long long>(batch), o.benchmark ? "benchmark" : "heuristic",
                static_cast<long long>(winner), plans.size());
    std::fflush(stdout);
  }

  if (workspace != nullptr) CK(cudaFree(workspace));
  for (void* p : b.ptrs) CK(cudaFree(p));
  if (!o.configs_die_first) {
    for (auto p : all_plans) CK(cudnnBackendDestroyDescriptor(p));
  }
  if (o.copy_configs) {
    for (auto c : copies) CK(cudnnBackendDestroyDescriptor(c));
  } else {
    for (auto c : cfgs) CK(cudnnBackendDestroyDescriptor(c));
  }
  if (o.configs_die_first) {
    for (auto p : all_plans) CK(cudnnBackendDestroyDescriptor(p));
  }
  for (auto c : dropped) CK(cudnnBackendDestroyDescriptor(c));
  for (auto h : heurs) CK(cudnnBackendDestroyDescriptor(h));
  if (graph) CK(cudnnBackendDestroyDescriptor(graph));
  CK(cudnnBackendDestroyDescriptor(op));
  CK(cudnnBackendDestroyDescriptor(conv));
  CK(cudnnBackendDestroyDescriptor(y));
  CK(cudnnBackendDestroyDescriptor(w));
  CK(cudnnBackendDestroyDescriptor(x));
}

void run_all(const Options& o) {
  cudnnHandle_t handle = nullptr;
  CK(cudnnCreate(&handle));
  cudaStream_t stream = nullptr;
  CK(cudaStreamCreate(&stream));
  CK(cudnnSetStream(handle, stream));
  for (int r = 0; r < o.repeat; ++r) {
    for (int k = 0; k < o.shapes; ++k) {
      int64_t batch = 8 + 8 * int64_t(k);
      run_problem(o, handle, stream, Kind::fwd, batch);
      if (o.bwd) {
        run_problem(o, handle, stream, Kind::dgrad, batch);
        run_problem(o, handle, stream, Kind::wgrad, batch);
      }
    }
  }
  CK(cudnnDestroy(handle));
  CK(cudaStreamDestroy(stream));
}

int int_arg(int argc, char** argv, int& i) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "frontend_search: %s needs a value\n", argv[i]);
    std::exit(2);
  }
  return std::atoi(argv[++i]);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--benchmark") o.benchmark = true;
    else if (a == "--bwd") o.bwd = true;
    else if (a == "--shapes") o.shapes = int_arg(argc, argv, i);
    else if (a == "--repeat") o.repeat = int_arg(argc, argv, i);
    else if (a == "--steps") o.steps = int_arg(argc, argv, i);
    else if (a == "--limit") o.limit = int_arg(argc, argv, i);
    else if (a == "--iters") o.iters = int_arg(argc, argv, i);
    else if (a == "--copy-configs") o.copy_configs = true;
    else if (a == "--graph-dies-early") o.graph_dies_early = true;
    else if (a == "--threads") o.threads = int_arg(argc, argv, i);
    else if (a == "--fallback") o.fallback = true;
    else if (a == "--skip-engine") o.skip_engine = int_arg(argc, argv, i);
    else if (a == "--step-ms")
      o.step_ms = int_arg(argc, argv, i);
    else if (a == "--alias")
      o.alias = true;
    else if (a == "--configs-die-first")
      o.configs_die_first = true;
    else if (a == "--sync-every")
      o.sync_every = int_arg(argc, argv, i);
    else if (a == "--alloc-every")
      o.alloc_every = int_arg(argc, argv, i);
    else {
      std::fprintf(stderr, "frontend_search: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  g_alias = o.alias;
  if (o.threads <= 1) {
    run_all(o);
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t) threads.emplace_back(run_all, std::cref(o));
    for (auto& t : threads) t.join();
  }
  return 0;
}
