// Test double of libcudnn.so.9 (same soname and symbol version), generated from the shim's
// cuDNN hook table so that every hooked function exists here with cuDNN 9's signature. Like the
// real library it links no CUDA runtime.
//
// It models what cuprobe's capture depends on, validating inputs the way cuDNN does:
//  - backend descriptors: an attribute store per descriptor; Finalize checks the attributes each
//    type requires (BAD_PARAM when missing or when an input is not finalized); heuristics fill
//    the caller's engine configurations with engines in a fixed order per mode; engine configs,
//    engines and knob choices answer GetAttribute; plans get a workspace size from their engine
//    and problem size; Execute checks plan and variant pack and takes a per-engine time;
//  - legacy descriptors, algorithm queries (Get*_v7 heuristics, Find* "measurements" sorted by
//    time), workspace queries and executions, with deterministic answers;
//  - handles with streams.
// Environment:
//   FAKECUDNN_ENGINES=N                engine global indices 0..N-1 exist (default 12)
//   FAKECUDNN_UNSUPPORTED_ENGINES=a,b  plans on these engines fail to finalize (NOT_SUPPORTED)
//   FAKECUDNN_ENGINE_US=idx:us,...     execution time per engine (default 20 + 7*((5*idx) % 11))
//   FAKECUDNN_HEUR_COUNT=N             configurations heuristics return (default 8)
//   FAKECUDNN_REPORT_LIVE=1            at exit, "fakecudnn: N backend descriptors alive" on stderr
//   FAKECUDNN_FAIL=API:CODE[:NTH[:TIMES]],...  as FAKECUDA_FAIL in fake_cudart.cpp
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "api.h"

namespace fake {

using cuprobe::ApiId;
using cuprobe::kApiCount;

// ---- configuration and scripted failures --------------------------------------------------

struct Script {
  int code;
  uint64_t nth;
  uint64_t times;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

struct Config {
  int engines = 12;
  int heur_count = 8;
  std::set<int64_t> unsupported;
  std::map<int64_t, int> engine_us;
  std::vector<Script> fail[kApiCount];
  std::atomic<uint64_t> calls[kApiCount] = {};
};

Config& config() {
  static Config* c = [] {
    auto* cfg = new Config();
    if (const char* v = std::getenv("FAKECUDNN_ENGINES")) cfg->engines = std::atoi(v);
    if (const char* v = std::getenv("FAKECUDNN_HEUR_COUNT")) cfg->heur_count = std::atoi(v);
    if (const char* v = std::getenv("FAKECUDNN_UNSUPPORTED_ENGINES")) {
      for (const auto& s : split(v, ',')) cfg->unsupported.insert(std::atoll(s.c_str()));
    }
    if (const char* v = std::getenv("FAKECUDNN_ENGINE_US")) {
      for (const auto& item : split(v, ',')) {
        auto parts = split(item, ':');
        if (parts.size() == 2) cfg->engine_us[std::atoll(parts[0].c_str())] = std::atoi(parts[1].c_str());
      }
    }
    if (const char* v = std::getenv("FAKECUDNN_FAIL")) {
      for (const auto& item : split(v, ',')) {
        auto parts = split(item, ':');
        if (parts.size() < 2) continue;
        for (int id = 0; id < kApiCount; ++id) {
          if (parts[0] != cuprobe::kApis[id].name) continue;
          cfg->fail[id].push_back(Script{std::atoi(parts[1].c_str()),
                                         parts.size() > 2 ? std::strtoull(parts[2].c_str(), nullptr, 10) : 1,
                                         parts.size() > 3 ? std::strtoull(parts[3].c_str(), nullptr, 10) : 1});
        }
      }
    }
    return cfg;
  }();
  return *c;
}

cudnnStatus_t scripted(ApiId id) {
  Config& c = config();
  if (c.fail[int(id)].empty()) return CUDNN_STATUS_SUCCESS;
  uint64_t n = c.calls[int(id)].fetch_add(1) + 1;
  for (const Script& s : c.fail[int(id)]) {
    if (n >= s.nth && n < s.nth + s.times) return cudnnStatus_t(s.code);
  }
  return CUDNN_STATUS_SUCCESS;
}

// ---- backend descriptors -------------------------------------------------------------------

struct Attr {
  cudnnBackendAttributeType_t type;
  int64_t count;
  std::vector<uint8_t> bytes;
};

struct BDesc {
  cudnnBackendDescriptorType_t type;
  std::map<int, Attr> attrs;
  bool finalized = false;
  // Filled by cuDNN itself (heuristics results, queries) rather than by SetAttribute.
  int64_t engine_index = -1;
  BDesc* graph = nullptr;
  std::vector<std::pair<cudnnBackendKnobType_t, int64_t>> knobs;
  int64_t workspace = 0;
};

std::mutex g_mu;
std::set<BDesc*>& live() {
  static auto* s = new std::set<BDesc*>();
  return *s;
}

BDesc* find(void* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* b = static_cast<BDesc*>(d);
  return live().count(b) ? b : nullptr;
}

size_t element_size(cudnnBackendAttributeType_t t) {
  switch (t) {
    case CUDNN_TYPE_BOOLEAN:
    case CUDNN_TYPE_CHAR: return 1;
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return 8;
    case CUDNN_TYPE_FRACTION: return sizeof(cudnnFraction_t);
    default: return 4;  // enums, float, int32
  }
}

template <typename T>
bool get(const BDesc* d, int name, T* out, int64_t i = 0) {
  auto it = d->attrs.find(name);
  if (it == d->attrs.end() || i >= it->second.count || it->second.bytes.size() < (i + 1) * sizeof(T)) return false;
  std::memcpy(out, it->second.bytes.data() + i * sizeof(T), sizeof(T));
  return true;
}

bool has(const BDesc* d, std::initializer_list<int> names) {
  for (int n : names) {
    if (!d->attrs.count(n)) return false;
  }
  return true;
}

BDesc* desc_attr(const BDesc* d, int name) {
  void* p = nullptr;
  return get(d, name, &p) ? find(p) : nullptr;
}

bool finalized_desc_attr(const BDesc* d, int name) {
  BDesc* b = desc_attr(d, name);
  return b != nullptr && b->finalized;
}

int64_t output_elements(const BDesc* graph) {
  if (graph == nullptr) return 0;
  BDesc* op = desc_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (op == nullptr) return 0;
  static const int kOutputs[] = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW};
  for (int name : kOutputs) {
    BDesc* t = desc_attr(op, name);
    if (t == nullptr) continue;
    auto it = t->attrs.find(CUDNN_ATTR_TENSOR_DIMENSIONS);
    if (it == t->attrs.end()) return 0;
    int64_t n = 1;
    for (int64_t i = 0; i < it->second.count; ++i) {
      int64_t v = 0;
      get(t, CUDNN_ATTR_TENSOR_DIMENSIONS, &v, i);
      n *= v;
    }
    return n;
  }
  return 0;
}

int64_t workspace_for(int64_t engine, const BDesc* graph) {
  if (engine == 11) return int64_t(1) << 30;
  return (engine % 5) * output_elements(graph) * 4;
}

std::vector<int64_t> heuristic_order(int mode) {
  std::vector<int64_t> order = mode == CUDNN_HEUR_MODE_FALLBACK ? std::vector<int64_t>{0, 1, 2}
                                                                : std::vector<int64_t>{7, 3, 0, 5, 9, 1, 11, 2, 4, 6, 8, 10};
  int engines = config().engines;
  order.erase(std::remove_if(order.begin(), order.end(), [&](int64_t e) { return e >= engines; }), order.end());
  return order;
}

std::vector<std::pair<cudnnBackendKnobType_t, int64_t>> knobs_for(int64_t engine) {
  return {{CUDNN_KNOB_TYPE_TILE_SIZE, engine % 4}, {CUDNN_KNOB_TYPE_STAGES, 3 + engine % 2}};
}

// The knob choices set on a configuration built by hand (CUDNN_ATTR_ENGINECFG_KNOB_CHOICES).
std::vector<std::pair<cudnnBackendKnobType_t, int64_t>> set_knobs(const BDesc* cfg) {
  std::vector<std::pair<cudnnBackendKnobType_t, int64_t>> knobs;
  auto it = cfg->attrs.find(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES);
  if (it == cfg->attrs.end()) return knobs;
  for (int64_t i = 0; i < it->second.count; ++i) {
    void* p = nullptr;
    cudnnBackendKnobType_t type{};
    int64_t value = 0;
    const BDesc* k = get(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, &p, i) ? find(p) : nullptr;
    if (k && get(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, &type) && get(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, &value)) {
      knobs.emplace_back(type, value);
    }
  }
  return knobs;
}

// The engine index of a configuration: filled by heuristics, or set through an engine descriptor.
int64_t cfg_engine(const BDesc* cfg, const BDesc** graph_out) {
  if (cfg->engine_index >= 0) {
    *graph_out = cfg->graph;
    return cfg->engine_index;
  }
  BDesc* engine = desc_attr(cfg, CUDNN_ATTR_ENGINECFG_ENGINE);
  if (engine == nullptr) return -1;
  *graph_out = engine->graph ? engine->graph : desc_attr(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
  int64_t index = engine->engine_index;
  get(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &index);
  return index;
}

cudnnStatus_t finalize(BDesc* d) {
  if (d->finalized) return CUDNN_STATUS_BAD_PARAM;
  switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      if (!has(d, {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_ATTR_TENSOR_STRIDES,
                   CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT})) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
      if (!has(d, {CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                   CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                   CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                   CUDNN_ATTR_CONVOLUTION_DILATIONS})) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      if (!finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y)) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      if (!finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX)) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      if (!finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY) ||
          !finalized_desc_attr(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW)) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (!has(d, {CUDNN_ATTR_OPERATIONGRAPH_HANDLE}) || !finalized_desc_attr(d, CUDNN_ATTR_OPERATIONGRAPH_OPS)) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      if (!has(d, {CUDNN_ATTR_ENGINEHEUR_MODE}) || !finalized_desc_attr(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: {
      int64_t index = -1;
      if (!finalized_desc_attr(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH) || !get(d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &index)) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      if (index < 0 || index >= config().engines) return CUDNN_STATUS_NOT_SUPPORTED;
      d->engine_index = index;
      d->graph = desc_attr(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
      break;
    }
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      if (!finalized_desc_attr(d, CUDNN_ATTR_ENGINECFG_ENGINE)) return CUDNN_STATUS_BAD_PARAM;
      break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
      BDesc* cfg = desc_attr(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
      if (!has(d, {CUDNN_ATTR_EXECUTION_PLAN_HANDLE}) || cfg == nullptr || !cfg->finalized) return CUDNN_STATUS_BAD_PARAM;
      const BDesc* graph = nullptr;
      int64_t engine = cfg_engine(cfg, &graph);
      if (engine < 0) return CUDNN_STATUS_BAD_PARAM;
      if (config().unsupported.count(engine)) return CUDNN_STATUS_NOT_SUPPORTED;
      d->engine_index = engine;
      d->workspace = workspace_for(engine, graph);
      break;
    }
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      if (!has(d, {CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                   CUDNN_ATTR_VARIANT_PACK_WORKSPACE})) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      break;
    default: break;
  }
  d->finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
void put(void* out, int64_t i, T v) {
  std::memcpy(static_cast<char*>(out) + i * sizeof(T), &v, sizeof v);
}

// Answers cuDNN computes rather than stores; -1 when the attribute is an ordinary stored one.
int computed_get(BDesc* d, int name, int64_t requested, int64_t* count, void* out, cudnnStatus_t* status) {
  *status = CUDNN_STATUS_SUCCESS;
  if (d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
    if (!d->finalized) return (*status = CUDNN_STATUS_BAD_PARAM), 0;
    int mode = 0;
    get(d, CUDNN_ATTR_ENGINEHEUR_MODE, &mode);
    std::vector<int64_t> order = heuristic_order(mode);
    int64_t available = std::min<int64_t>(int64_t(order.size()), config().heur_count);
    if (requested == 0 || out == nullptr) return (*count = available), 0;
    int64_t n = std::min(requested, available);
    BDesc* graph = desc_attr(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
    for (int64_t i = 0; i < n; ++i) {
      BDesc* cfg = find(static_cast<void**>(out)[i]);
      // A configuration already finalized is refused (cuDNN does not fill it twice).
      if (cfg == nullptr || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || cfg->finalized) {
        return (*status = CUDNN_STATUS_BAD_PARAM), 0;
      }
      cfg->engine_index = order[size_t(i)];
      cfg->graph = graph;
      cfg->knobs = knobs_for(cfg->engine_index);
      cfg->finalized = true;
    }
    return (*count = n), 0;
  }
  if (d->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) {
    const BDesc* graph = nullptr;
    int64_t engine = cfg_engine(d, &graph);
    if (name == CUDNN_ATTR_ENGINECFG_ENGINE && engine >= 0) {
      BDesc* e = out ? find(static_cast<void**>(out)[0]) : nullptr;
      if (e == nullptr || e->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR) return (*status = CUDNN_STATUS_BAD_PARAM), 0;
      e->engine_index = engine;
      e->graph = const_cast<BDesc*>(graph);
      e->finalized = true;
      return (*count = 1), 0;
    }
    if (name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES && engine >= 0) {
      // Heuristics' configurations hold the engine's knobs; one built by hand holds what was set.
      auto knobs = d->engine_index >= 0 ? knobs_for(engine) : set_knobs(d);
      if (out == nullptr || requested == 0) return (*count = int64_t(knobs.size())), 0;
      int64_t n = std::min<int64_t>(requested, int64_t(knobs.size()));
      for (int64_t i = 0; i < n; ++i) {
        BDesc* k = find(static_cast<void**>(out)[i]);
        if (k == nullptr || k->type != CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR) return (*status = CUDNN_STATUS_BAD_PARAM), 0;
        k->knobs = {knobs[size_t(i)]};
        k->finalized = true;
      }
      return (*count = n), 0;
    }
    if (name == CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE && engine >= 0) {
      put<int64_t>(out, 0, workspace_for(engine, graph));
      return (*count = 1), 0;
    }
  }
  if (d->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && d->engine_index >= 0) {
    int64_t e = d->engine_index;
    if (name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) {
      put<int64_t>(out, 0, e);
      return (*count = 1), 0;
    }
    if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE) {
      std::vector<cudnnBackendNumericalNote_t> notes;
      if (e % 2 == 0) notes.push_back(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
      if (e == 5) notes.push_back(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
      if (e == 9) notes.push_back(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
      int64_t n = std::min<int64_t>(requested, int64_t(notes.size()));
      for (int64_t i = 0; out && i < n; ++i) put(out, i, notes[size_t(i)]);
      return (*count = out ? n : int64_t(notes.size())), 0;
    }
    if (name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE) {
      int64_t n = e >= 8 && requested > 0 ? 1 : 0;
      if (n && out) put(out, 0, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
      return (*count = n), 0;
    }
  }
  if (d->type == CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR && !d->knobs.empty()) {
    if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE) {
      put(out, 0, d->knobs[0].first);
      return (*count = 1), 0;
    }
    if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE) {
      put<int64_t>(out, 0, d->knobs[0].second);
      return (*count = 1), 0;
    }
  }
  if (d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
    if (!d->finalized) return (*status = CUDNN_STATUS_BAD_PARAM), 0;
    put<int64_t>(out, 0, d->workspace);
    return (*count = 1), 0;
  }
  return -1;
}

int engine_us(int64_t engine) {
  auto it = config().engine_us.find(engine);
  return it != config().engine_us.end() ? it->second : int(20 + 7 * ((engine * 5) % 11));
}

// ---- legacy descriptors ---------------------------------------------------------------------

struct LegacyDesc {
  int kind;
  bool set = false;
};
std::map<void*, LegacyDesc>& legacy() {
  static auto* m = new std::map<void*, LegacyDesc>();
  return *m;
}

template <typename Desc>
cudnnStatus_t legacy_create(Desc* d, int kind) {
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  auto* p = new char[16];
  std::lock_guard<std::mutex> lock(g_mu);
  legacy()[p] = LegacyDesc{kind};
  *d = reinterpret_cast<Desc>(p);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t legacy_destroy(void* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (d == nullptr) return CUDNN_STATUS_SUCCESS;
  auto it = legacy().find(d);
  if (it == legacy().end()) return CUDNN_STATUS_BAD_PARAM;
  legacy().erase(it);
  delete[] static_cast<char*>(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t legacy_set(const void* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = legacy().find(const_cast<void*>(d));
  if (it == legacy().end()) return CUDNN_STATUS_BAD_PARAM;
  it->second.set = true;
  return CUDNN_STATUS_SUCCESS;
}

bool legacy_ready(std::initializer_list<const void*> ds) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const void* d : ds) {
    auto it = legacy().find(const_cast<void*>(d));
    if (it == legacy().end() || !it->second.set) return false;
  }
  return true;
}

// Eight algorithms; heuristics rank them one way, "measurement" another.
template <typename Perf>
cudnnStatus_t algo_results(int requested, int* returned, Perf* perf, bool measured) {
  if (returned == nullptr || perf == nullptr || requested <= 0) return CUDNN_STATUS_BAD_PARAM;
  static const int kHeur[8] = {1, 0, 6, 2, 7, 5, 3, 4};
  static const int kMeasured[8] = {6, 1, 7, 0, 2, 5, 4, 3};
  const int* order = measured ? kMeasured : kHeur;
  int n = std::min(requested, 8);
  for (int i = 0; i < n; ++i) {
    Perf& p = perf[i];
    std::memset(&p, 0, sizeof p);
    p.algo = decltype(p.algo)(order[i]);
    p.status = order[i] == 3 ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
    p.time = p.status == CUDNN_STATUS_SUCCESS ? 0.05f * float(i + 1) : -1.0f;
    p.memory = size_t(order[i]) << 20;
    p.determinism = order[i] == 5 ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;
    p.mathType = order[i] % 2 ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

// ---- behaviour per API ----------------------------------------------------------------------

template <ApiId kSig>
struct Behave {
  template <typename... A>
  static cudnnStatus_t run(A...) {
    return CUDNN_STATUS_SUCCESS;
  }
};

struct Handle {
  cudaStream_t stream = nullptr;
};

template <>
struct Behave<ApiId::cudnnCreate> {
  static cudnnStatus_t run(cudnnHandle_t* h) {
    if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *h = reinterpret_cast<cudnnHandle_t>(new Handle());
    return CUDNN_STATUS_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cudnnDestroy> {
  static cudnnStatus_t run(cudnnHandle_t h) {
    delete reinterpret_cast<Handle*>(h);
    return CUDNN_STATUS_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cudnnSetStream> {
  static cudnnStatus_t run(cudnnHandle_t h, cudaStream_t s) {
    if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
    reinterpret_cast<Handle*>(h)->stream = s;
    return CUDNN_STATUS_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cudnnGetStream> {
  static cudnnStatus_t run(cudnnHandle_t h, cudaStream_t* s) {
    if (h == nullptr || s == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *s = reinterpret_cast<Handle*>(h)->stream;
    return CUDNN_STATUS_SUCCESS;
  }
};

template <>
struct Behave<ApiId::cudnnBackendCreateDescriptor> {
  static cudnnStatus_t run(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* d) {
    if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
    auto* b = new BDesc();
    b->type = type;
    static bool report = [] {
      if (std::getenv("FAKECUDNN_REPORT_LIVE")) {
        std::atexit([] {
          std::lock_guard<std::mutex> lock(g_mu);
          std::fprintf(stderr, "fakecudnn: %zu backend descriptors alive\n", live().size());
        });
      }
      return true;
    }();
    (void)report;
    std::lock_guard<std::mutex> lock(g_mu);
    live().insert(b);
    *d = b;
    return CUDNN_STATUS_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cudnnBackendDestroyDescriptor> {
  static cudnnStatus_t run(cudnnBackendDescriptor_t d) {
    std::lock_guard<std::mutex> lock(g_mu);
    auto* b = static_cast<BDesc*>(d);
    if (!live().erase(b)) return CUDNN_STATUS_BAD_PARAM;
    // cuDNN keeps what configurations and plans need of a destroyed operation graph (PyTorch
    // destroys the graph before building plans from heuristics' configurations); the double
    // keeps the whole descriptor alive for them.
    if (b->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) {
      static std::vector<std::unique_ptr<BDesc>> retired;
      retired.emplace_back(b);
      return CUDNN_STATUS_SUCCESS;
    }
    delete b;
    return CUDNN_STATUS_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cudnnBackendSetAttribute> {
  static cudnnStatus_t run(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t count, const void* el) {
    BDesc* b = find(d);
    if (b == nullptr || b->finalized || count < 0 || (count > 0 && el == nullptr)) return CUDNN_STATUS_BAD_PARAM;
    Attr a{type, count, {}};
    const auto* p = static_cast<const uint8_t*>(el);
    a.bytes.assign(p, p + size_t(count) * element_size(type));
    b->attrs[name] = std::move(a);
    return CUDNN_STATUS_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cudnnBackendGetAttribute> {
  static cudnnStatus_t run(cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t requested, int64_t* count, void* out) {
    BDesc* b = find(d);
    if (b == nullptr || count == nullptr) return CUDNN_STATUS_BAD_PARAM;
    cudnnStatus_t status;
    if (computed_get(b, name, requested, count, out, &status) >= 0) return status;
    auto it = b->attrs.find(name);
    if (it == b->attrs.end()) return CUDNN_STATUS_BAD_PARAM;
    if (it->second.type != type) return CUDNN_STATUS_BAD_PARAM;
    int64_t n = std::min(requested, it->second.count);
    if (out != nullptr && n > 0) std::memcpy(out, it->second.bytes.data(), size_t(n) * element_size(type));
    *count = out ? n : it->second.count;
    return CUDNN_STATUS_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cudnnBackendFinalize> {
  static cudnnStatus_t run(cudnnBackendDescriptor_t d) {
    BDesc* b = find(d);
    return b ? finalize(b) : CUDNN_STATUS_BAD_PARAM;
  }
};
template <>
struct Behave<ApiId::cudnnBackendExecute> {
  static cudnnStatus_t run(cudnnHandle_t h, cudnnBackendDescriptor_t plan_d, cudnnBackendDescriptor_t pack_d) {
    BDesc* plan = find(plan_d);
    BDesc* pack = find(pack_d);
    if (h == nullptr || plan == nullptr || pack == nullptr || !plan->finalized || !pack->finalized ||
        plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    void* ws = nullptr;
    get(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, &ws);
    if (plan->workspace > 0 && ws == nullptr) return CUDNN_STATUS_BAD_PARAM;
    int us = engine_us(plan->engine_index);
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    // The CUDA runtime double's device clock, which its events read (found at run time: like
    // the real libcudnn, this library does not link the runtime).
    using DeviceWork = void (*)(unsigned long long);
    static auto device_work = reinterpret_cast<DeviceWork>(dlsym(RTLD_DEFAULT, "fakecuda_device_work"));
    if (device_work) device_work(static_cast<unsigned long long>(us) * 1000);
    return CUDNN_STATUS_SUCCESS;
  }
};

#define FAKECUDNN_LEGACY_PAIR(kind, type)                                                             \
  template <>                                                                                      \
  struct Behave<ApiId::cudnnCreate##kind##Descriptor> {                                            \
    static cudnnStatus_t run(type* d) { return legacy_create(d, __LINE__); }                       \
  };                                                                                               \
  template <>                                                                                      \
  struct Behave<ApiId::cudnnDestroy##kind##Descriptor> {                                           \
    static cudnnStatus_t run(type d) { return legacy_destroy(d); }                                 \
  };
FAKECUDNN_LEGACY_PAIR(Tensor, cudnnTensorDescriptor_t)
FAKECUDNN_LEGACY_PAIR(Filter, cudnnFilterDescriptor_t)
FAKECUDNN_LEGACY_PAIR(Convolution, cudnnConvolutionDescriptor_t)
FAKECUDNN_LEGACY_PAIR(Activation, cudnnActivationDescriptor_t)
FAKECUDNN_LEGACY_PAIR(Pooling, cudnnPoolingDescriptor_t)
FAKECUDNN_LEGACY_PAIR(Dropout, cudnnDropoutDescriptor_t)
FAKECUDNN_LEGACY_PAIR(RNN, cudnnRNNDescriptor_t)
FAKECUDNN_LEGACY_PAIR(RNNData, cudnnRNNDataDescriptor_t)
FAKECUDNN_LEGACY_PAIR(CTCLoss, cudnnCTCLossDescriptor_t)
FAKECUDNN_LEGACY_PAIR(SpatialTransformer, cudnnSpatialTransformerDescriptor_t)
#undef FAKECUDNN_LEGACY_PAIR

// Setters: the descriptor must exist; its first argument is the descriptor.
#define FAKECUDNN_SETTER(api)                           \
  template <>                                           \
  struct Behave<ApiId::api> {                           \
    template <typename D, typename... A>                \
    static cudnnStatus_t run(D d, A...) {               \
      return legacy_set(reinterpret_cast<const void*>(d)); \
    }                                                   \
  };
FAKECUDNN_SETTER(cudnnSetTensorNdDescriptor)
FAKECUDNN_SETTER(cudnnSetTensorNdDescriptorEx)
FAKECUDNN_SETTER(cudnnSetTensor4dDescriptor)
FAKECUDNN_SETTER(cudnnSetTensor4dDescriptorEx)
FAKECUDNN_SETTER(cudnnSetFilterNdDescriptor)
FAKECUDNN_SETTER(cudnnSetFilter4dDescriptor)
FAKECUDNN_SETTER(cudnnSetConvolutionNdDescriptor)
FAKECUDNN_SETTER(cudnnSetConvolution2dDescriptor)
FAKECUDNN_SETTER(cudnnSetConvolutionGroupCount)
FAKECUDNN_SETTER(cudnnSetConvolutionMathType)
FAKECUDNN_SETTER(cudnnSetActivationDescriptor)
FAKECUDNN_SETTER(cudnnSetPooling2dDescriptor)
FAKECUDNN_SETTER(cudnnSetPoolingNdDescriptor)
FAKECUDNN_SETTER(cudnnSetDropoutDescriptor)
FAKECUDNN_SETTER(cudnnRestoreDropoutDescriptor)
FAKECUDNN_SETTER(cudnnSetRNNDescriptor_v8)
FAKECUDNN_SETTER(cudnnSetRNNDataDescriptor)
FAKECUDNN_SETTER(cudnnSetCTCLossDescriptorEx)
FAKECUDNN_SETTER(cudnnSetCTCLossDescriptor_v9)
FAKECUDNN_SETTER(cudnnSetSpatialTransformerNdDescriptor)
#undef FAKECUDNN_SETTER

template <>
struct Behave<ApiId::cudnnGetConvolutionForwardAlgorithmMaxCount> {
  static cudnnStatus_t run(cudnnHandle_t, int* n) {
    if (n == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *n = 8;
    return CUDNN_STATUS_SUCCESS;
  }
};

#define FAKECUDNN_ALGO_QUERY(api, measured, d0, d1, d2, d3)                                      \
  template <>                                                                                    \
  struct Behave<ApiId::api> {                                                                    \
    template <typename... A>                                                                     \
    static cudnnStatus_t run(A... a) {                                                           \
      return dispatch(a...);                                                                     \
    }                                                                                            \
    template <typename H, typename T0, typename T1, typename T2, typename T3, typename Perf>     \
    static cudnnStatus_t dispatch(H, T0 x0, T1 x1, T2 x2, T3 x3, const int req, int* ret, Perf* perf) { \
      if (!legacy_ready({x0, x1, x2, x3})) return CUDNN_STATUS_BAD_PARAM;                       \
      return algo_results(req, ret, perf, measured);                                             \
    }                                                                                            \
  };
FAKECUDNN_ALGO_QUERY(cudnnGetConvolutionForwardAlgorithm_v7, false, x, w, c, y)
FAKECUDNN_ALGO_QUERY(cudnnGetConvolutionBackwardDataAlgorithm_v7, false, w, dy, c, dx)
FAKECUDNN_ALGO_QUERY(cudnnGetConvolutionBackwardFilterAlgorithm_v7, false, x, dy, c, dw)
FAKECUDNN_ALGO_QUERY(cudnnFindConvolutionForwardAlgorithm, true, x, w, c, y)
FAKECUDNN_ALGO_QUERY(cudnnFindConvolutionBackwardDataAlgorithm, true, w, dy, c, dx)
FAKECUDNN_ALGO_QUERY(cudnnFindConvolutionBackwardFilterAlgorithm, true, x, dy, c, dw)
#undef FAKECUDNN_ALGO_QUERY

// FindEx: (handle, d0, p0, d1, p1, conv, d2, p2, requested, returned, perf, workspace, size).
#define FAKECUDNN_FIND_EX(api)                                                                     \
  template <>                                                                                      \
  struct Behave<ApiId::api> {                                                                      \
    template <typename H, typename D0, typename D1, typename C, typename D2, typename Perf>        \
    static cudnnStatus_t run(H, D0 d0, const void*, D1 d1, const void*, C c, D2 d2, void*, const int req, \
                             int* ret, Perf* perf, void*, size_t) {                                \
      if (!legacy_ready({d0, d1, c, d2})) return CUDNN_STATUS_BAD_PARAM;                           \
      std::this_thread::sleep_for(std::chrono::microseconds(200));                                 \
      return algo_results(req, ret, perf, true);                                                   \
    }                                                                                              \
  };
FAKECUDNN_FIND_EX(cudnnFindConvolutionForwardAlgorithmEx)
FAKECUDNN_FIND_EX(cudnnFindConvolutionBackwardDataAlgorithmEx)
FAKECUDNN_FIND_EX(cudnnFindConvolutionBackwardFilterAlgorithmEx)
#undef FAKECUDNN_FIND_EX

// Workspace size queries whose last two arguments are (algo, size*).
#define FAKECUDNN_CONV_WS(api)                                                                     \
  template <>                                                                                      \
  struct Behave<ApiId::api> {                                                                      \
    template <typename H, typename D0, typename D1, typename C, typename D2, typename Algo>        \
    static cudnnStatus_t run(H, D0 d0, D1 d1, C c, D2 d2, Algo algo, size_t* size) {               \
      if (!legacy_ready({d0, d1, c, d2}) || size == nullptr) return CUDNN_STATUS_BAD_PARAM;        \
      *size = size_t(algo) << 20;                                                                  \
      return CUDNN_STATUS_SUCCESS;                                                                 \
    }                                                                                              \
  };
FAKECUDNN_CONV_WS(cudnnGetConvolutionForwardWorkspaceSize)
FAKECUDNN_CONV_WS(cudnnGetConvolutionBackwardDataWorkspaceSize)
FAKECUDNN_CONV_WS(cudnnGetConvolutionBackwardFilterWorkspaceSize)
#undef FAKECUDNN_CONV_WS

// Size queries whose last argument is a size_t*: a fixed answer.
#define FAKECUDNN_SIZE_QUERY(api, bytes)           \
  template <>                                      \
  struct Behave<ApiId::api> {                      \
    template <typename... A>                       \
    static cudnnStatus_t run(A... a) {             \
      size_t* out = last(a...);                    \
      if (out == nullptr) return CUDNN_STATUS_BAD_PARAM; \
      *out = bytes;                                \
      return CUDNN_STATUS_SUCCESS;                 \
    }                                              \
    template <typename T>                          \
    static size_t* last(T t) {                     \
      if constexpr (std::is_same_v<T, size_t*>) {  \
        return t;                                  \
      } else {                                     \
        return nullptr;                            \
      }                                            \
    }                                              \
    template <typename T, typename... R>           \
    static size_t* last(T, R... r) {               \
      return last(r...);                           \
    }                                              \
  };
FAKECUDNN_SIZE_QUERY(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize, 1 << 20)
FAKECUDNN_SIZE_QUERY(cudnnGetBatchNormalizationBackwardExWorkspaceSize, 2 << 20)
FAKECUDNN_SIZE_QUERY(cudnnGetBatchNormalizationTrainingExReserveSpaceSize, 512 << 10)
FAKECUDNN_SIZE_QUERY(cudnnGetCTCLossWorkspaceSize, 64 << 10)
FAKECUDNN_SIZE_QUERY(cudnnGetCTCLossWorkspaceSize_v8, 64 << 10)
FAKECUDNN_SIZE_QUERY(cudnnDropoutGetStatesSize, 4 << 10)
FAKECUDNN_SIZE_QUERY(cudnnGetRNNWeightSpaceSize, 3 << 20)
#undef FAKECUDNN_SIZE_QUERY

template <>
struct Behave<ApiId::cudnnGetRNNTempSpaceSizes> {
  static cudnnStatus_t run(cudnnHandle_t, cudnnRNNDescriptor_t rnn, cudnnForwardMode_t mode, cudnnRNNDataDescriptor_t x,
                           size_t* ws, size_t* reserve) {
    if (!legacy_ready({rnn, x}) || ws == nullptr) return CUDNN_STATUS_BAD_PARAM;
    *ws = 8 << 20;
    if (reserve) *reserve = mode == CUDNN_FWD_MODE_TRAINING ? (4 << 20) : 0;
    return CUDNN_STATUS_SUCCESS;
  }
};

// Executions: the descriptors they use must have been set up.
template <>
struct Behave<ApiId::cudnnConvolutionForward> {
  static cudnnStatus_t run(cudnnHandle_t h, const void*, const cudnnTensorDescriptor_t x, const void*,
                           const cudnnFilterDescriptor_t w, const void*, const cudnnConvolutionDescriptor_t c,
                           cudnnConvolutionFwdAlgo_t, void*, size_t, const void*, const cudnnTensorDescriptor_t y, void*) {
    return h && legacy_ready({x, w, c, y}) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
  }
};
template <>
struct Behave<ApiId::cudnnConvolutionBackwardData> {
  static cudnnStatus_t run(cudnnHandle_t h, const void*, const cudnnFilterDescriptor_t w, const void*,
                           const cudnnTensorDescriptor_t dy, const void*, const cudnnConvolutionDescriptor_t c,
                           cudnnConvolutionBwdDataAlgo_t, void*, size_t, const void*, const cudnnTensorDescriptor_t dx,
                           void*) {
    return h && legacy_ready({w, dy, c, dx}) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
  }
};
template <>
struct Behave<ApiId::cudnnConvolutionBackwardFilter> {
  static cudnnStatus_t run(cudnnHandle_t h, const void*, const cudnnTensorDescriptor_t x, const void*,
                           const cudnnTensorDescriptor_t dy, const void*, const cudnnConvolutionDescriptor_t c,
                           cudnnConvolutionBwdFilterAlgo_t, void*, size_t, const void*,
                           const cudnnFilterDescriptor_t dw, void*) {
    return h && legacy_ready({x, dy, c, dw}) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
  }
};

}  // namespace fake

#define FAKECUDNN_DEFINE(ret, name, sig, params, args, api_flags)                                  \
  extern "C" __attribute__((visibility("default"))) ret name params {                              \
    if (cudnnStatus_t r = fake::scripted(cuprobe::ApiId::name); r != CUDNN_STATUS_SUCCESS) return r; \
    return fake::Behave<cuprobe::ApiId::sig>::run args;                                            \
  }
CUPROBE_CUDNN_HOOKS(FAKECUDNN_DEFINE)

extern "C" __attribute__((visibility("default"))) size_t cudnnGetVersion(void) { return 91900; }
extern "C" __attribute__((visibility("default"))) size_t cudnnGetCudartVersion(void) { return 13000; }
extern "C" __attribute__((visibility("default"))) const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}
extern "C" __attribute__((visibility("default"))) void cudnnGetLastErrorString(char* message, size_t max) {
  if (message && max) message[0] = 0;
}
