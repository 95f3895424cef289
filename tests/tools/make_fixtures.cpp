// make_fixtures: writes the rule fixtures, JSON Lines traces under OUT_DIR/<rule>/fire (the rule
// must report something) and OUT_DIR/<rule>/quiet (it must not). The traces follow the call
// sequences cuprobe records from PyTorch (graph and plan finalizes, timed candidate executions,
// the winner's runs, the caching allocator's calls), reduced to what matters.
//
// Lines are written by the writer `cuprobe dump` uses (analyzer/trace/jsonl_writer.h), problems
// are typed (trace::ProblemDesc) with their text from render_problem and their hash from
// problem_hash, so the fixtures cannot drift from the format. The files are committed; the test
// RuleFixturesMatchGenerator fails when they differ from what this program writes. After changing
// a scenario here, regenerate them from the build directory:
//
//   build/bin/make_fixtures rules/fixtures
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <cudnn.h>

#include <fmt/format.h>

#include "json_line.h"
#include "problem_text.h"
#include "trace/jsonl_writer.h"

namespace {

using cuprobe::JsonLine;
using cuprobe::jsonl::CallLine;
namespace trace = cuprobe::trace;
namespace fs = std::filesystem;

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kMiB = 1ull << 20;

std::string g_out;  // OUT_DIR

// A cuDNN problem as the shim records a backend convolution graph: typed, its text rendered and
// its hash computed by cuprobe's own code.
struct Problem {
  trace::ProblemDesc desc{};
  std::string text;
  uint64_t hash = 0;
};

void packed_nchw(trace::ProblemTensor& t, trace::TensorRole role, int dtype, int64_t n, int64_t c, int64_t h,
                 int64_t w) {
  t.role = uint8_t(role);
  t.dtype = int8_t(dtype);
  t.nbdims = 4;
  t.layout = uint8_t(trace::Layout::kChannelsFirst);
  int64_t dims[4] = {n, c, h, w};
  for (int i = 0; i < 4; ++i) {
    t.dims[i] = dims[i];
    t.strides[i] = 0;  // a packed layout keeps no strides (as the shim records it)
  }
}

// A 3x3 forward convolution, padding 1, the given stride, NCHW packed tensors of one data type,
// cross-correlation accumulating in f32, through the backend API (no math type).
Problem conv_problem(int64_t batch, int64_t side, int64_t cin, int64_t cout, int stride, int dtype) {
  Problem p;
  trace::ProblemDesc& d = p.desc;
  d.op = uint16_t(trace::ProblemOp::kConvFwd);
  d.flags = trace::kProblemHasConv;
  d.math_type = -1;
  d.n_tensors = 3;
  int64_t out = (side + stride - 1) / stride;
  packed_nchw(d.tensors[0], trace::TensorRole::kX, dtype, batch, cin, side, side);
  packed_nchw(d.tensors[1], trace::TensorRole::kW, dtype, cout, cin, 3, 3);
  packed_nchw(d.tensors[2], trace::TensorRole::kY, dtype, batch, cout, out, out);
  trace::ProblemConv& c = d.conv;
  c.mode = CUDNN_CROSS_CORRELATION;
  c.compute = CUDNN_DATA_FLOAT;
  c.spatial = 2;
  c.groups = 1;
  for (int i = 0; i < 2; ++i) {
    c.pre[i] = 1;
    c.post[i] = 1;
    c.stride[i] = stride;
    c.dilation[i] = 1;
  }
  char buf[512];
  size_t n = cuprobe::render_problem(d, buf, sizeof buf);
  p.text.assign(buf, n < sizeof buf ? n : sizeof buf - 1);
  p.hash = trace::problem_hash(d);
  return p;
}

// Causal attention as cuDNN's own SDPA operation states it (what PyTorch 2.11 builds for
// scaled_dot_product_attention, training): q k v -> o forward, q k v do backward, bf16
// [batch, heads, sequence, 64] in PyTorch's [batch, sequence, heads, 64] memory order.
Problem attention(int64_t batch, int64_t heads, int64_t seq, bool backward) {
  Problem p;
  trace::ProblemDesc& d = p.desc;
  d.op = uint16_t(backward ? trace::ProblemOp::kSdpaBwd : trace::ProblemOp::kSdpaFwd);
  d.math_type = -1;
  d.n_tensors = 4;
  const trace::TensorRole roles[4] = {trace::TensorRole::kQ, trace::TensorRole::kK, trace::TensorRole::kV,
                                      backward ? trace::TensorRole::kDo : trace::TensorRole::kO};
  for (int i = 0; i < 4; ++i) {
    trace::ProblemTensor& t = d.tensors[i];
    t.role = uint8_t(roles[i]);
    t.dtype = CUDNN_DATA_BFLOAT16;
    t.nbdims = 4;
    t.layout = uint8_t(trace::Layout::kStrided);
    int64_t dims[4] = {batch, heads, seq, 64};
    int64_t strides[4] = {seq * heads * 64, 64, heads * 64, 1};
    for (int k = 0; k < 4; ++k) {
      t.dims[k] = dims[k];
      t.strides[k] = strides[k];
    }
  }
  d.n_params = 7;
  d.params[0] = 1;  // causal
  d.params[3] = 1;  // softmax statistics kept for the backward pass
  char buf[512];
  size_t n = cuprobe::render_problem(d, buf, sizeof buf);
  p.text.assign(buf, n < sizeof buf ? n : sizeof buf - 1);
  p.hash = trace::problem_hash(d);
  return p;
}

Problem conv(int64_t batch, int64_t side, int64_t channels = 64, int dtype = CUDNN_DATA_FLOAT) {
  return conv_problem(batch, side, channels, channels, 1, dtype);
}

// A convolution of a small network: 3x3, padding 1, the given stride.
Problem layer(int64_t batch, int64_t side, int64_t cin, int64_t cout, int stride = 1) {
  return conv_problem(batch, side, cin, cout, stride, CUDNN_DATA_FLOAT);
}

// A candidate plan of a search: engine, knobs, workspace, measured time, finalize status.
struct Candidate {
  int64_t engine;
  std::string knobs;
  uint64_t ws;
  double ms;
  int32_t status;
  uint32_t notes = 1;  // numerical-note bits (1 << cudnnBackendNumericalNote_t): tensor cores
};

// A plan that finalized: its descriptor id and the candidate it came from.
struct Plan {
  int64_t id;
  int64_t engine;
  std::string knobs;
  uint64_t ws;
  double ms;
};

uint64_t ms_ns(double ms) { return uint64_t(int64_t(ms * 1e6)); }

struct Stats {
  std::vector<std::pair<std::string, uint64_t>> counters;
};

// One process: its process line, problems and calls, with a clock in nanoseconds.
class Trace {
 public:
  explicit Trace(uint32_t pid, int rank = -1, std::string host = "node0", uint64_t total_mem = 80 * kGiB,
                 std::string state = "exited", std::optional<Stats> stats = std::nullopt)
      : pid_(pid), rank_(rank), host_(std::move(host)), total_mem_(total_mem), state_(std::move(state)),
        stats_(std::move(stats)) {}

  // A call at the current time; the clock moves past it and a microsecond more.
  CallLine& call(const std::string& api, uint64_t dur_ns = 1000, int32_t ret = 0, uint32_t tid = 0) {
    CallLine c;
    c.api = api;
    c.ret = ret;
    c.ts_ns = t_;
    c.dur_ns = dur_ns;
    c.pid = pid_;
    c.tid = tid ? tid : pid_;
    c.device = 0;
    calls_.push_back(std::move(c));
    t_ += dur_ns + 1000;
    return calls_.back();
  }
  // The call names the problem (by its text); its problem line goes before the calls.
  CallLine& with_problem(CallLine& c, const Problem& p) {
    if (!problem_index_.count(p.text)) {
      problem_index_[p.text] = problems_.size();
      problems_.push_back(p);
    }
    return c.problem("problem", p.text);
  }

  void wait(uint64_t ns) { t_ += ns; }
  // The next search's workspace request fails once (out of memory) and is asked for at half size.
  bool halve_workspace_once = false;
  // How long each candidate plan's finalize takes (cuDNN's attention plans: ~60 ms on an H100).
  uint64_t plan_build_ns = 200'000;
  // Before the next search, the allocator measures its room the way PyTorch's cudaMallocAsync
  // backend does (CudaMallocAsyncAllocator::cacheInfo): it asks for this much, halving on each
  // failure until a request succeeds, and gives that block straight back.
  uint64_t probe_pool_once = 0;
  // The plans the last search built, in candidate order (a program may run them itself).
  std::vector<Plan> last_plans;

  uint64_t malloc(uint64_t size, int32_t ret = 0, uint64_t dur_ns = 20'000) {
    uint64_t ptr = ret == 0 ? next_ptr_ : 0;
    if (ret == 0) next_ptr_ += (size + 0xFFFFF) & ~uint64_t(0xFFFFF);
    call("cudaMalloc", dur_ns, ret).hex("ptr", ptr).i("size", int64_t(size));
    return ptr;
  }
  void free(uint64_t ptr, uint64_t dur_ns = 20'000) { call("cudaFree", dur_ns).hex("ptr", ptr); }
  int64_t desc() { return ++next_desc_; }

  // cudnn-frontend's plan selection for one problem. Returns the winner's plan (with benchmark
  // off: the first plan that executed, none when none did).
  std::optional<Plan> search(const Problem& problem, const std::vector<Candidate>& candidates, size_t winner,
                             bool benchmark = true, uint32_t tid = 0, const std::vector<int64_t>& fail_exec = {},
                             int64_t align = 16) {
    with_problem(call("cudnnBackendFinalize", 150'000, 0, tid).i("desc", desc()).i("kind", 15), problem)
        .i("engine", -1)
        .text("knobs", "")
        .i("workspace", 0)
        .hex("notes", 0)
        .hex("behavior", 0)
        .i("align", align);
    with_problem(call("cudnnBackendGetAttribute", 2'000'000, 0, tid)
                     .i("desc", desc())
                     .i("kind", 4)
                     .i("attr", 202)
                     .i("count", int64_t(candidates.size())),
                 problem);
    std::vector<Plan> plans;
    for (const Candidate& c : candidates) {
      int64_t plan = desc();
      with_problem(call("cudnnBackendFinalize", plan_build_ns, c.status, tid).i("desc", plan).i("kind", 5), problem)
          .i("engine", c.engine)
          .text("knobs", c.knobs)
          .i("workspace", int64_t(c.status == 0 ? c.ws : 0))
          .hex("notes", c.notes)
          .hex("behavior", 0)
          .i("align", 16);
      if (c.status == 0) plans.push_back(Plan{plan, c.engine, c.knobs, c.ws, c.ms});
    }
    last_plans = plans;
    if (!benchmark) {
      for (const Plan& p : plans) {
        int32_t ret = 0;
        for (int64_t e : fail_exec) {
          if (e == p.engine) ret = 3000;
        }
        execute(p, problem, tid, ret, 0);
        if (ret == 0) return p;
      }
      return std::nullopt;
    }
    if (probe_pool_once) {
      uint64_t guess = probe_pool_once;
      probe_pool_once = 0;
      for (int fails = 0; fails < 1; ++fails, guess /= 2)
        call("cudaMallocAsync", 400'000, 2, tid).hex("ptr", 0).i("size", int64_t(guess)).hex("stream", 0);
      uint64_t ptr = next_ptr_;
      next_ptr_ += (guess + 0xFFFFF) & ~uint64_t(0xFFFFF);
      call("cudaMallocAsync", 300'000, 0, tid).hex("ptr", ptr).i("size", int64_t(guess)).hex("stream", 0);
      call("cudaFreeAsync", 10'000, 0, tid).hex("ptr", ptr).hex("stream", 0);
    }
    uint64_t max_ws = 0;
    for (const Plan& p : plans) max_ws = std::max(max_ws, p.ws);
    if (halve_workspace_once) {  // PyTorch: the workspace request failed, half of it is asked for
      halve_workspace_once = false;
      malloc(max_ws, 2, 500'000);
      max_ws /= 2;
    }
    uint64_t ws_ptr = malloc(max_ws);
    call("cudaEventCreate", 1000, 0, tid).hex("event", 0x10);
    call("cudaEventCreate", 1000, 0, tid).hex("event", 0x20);
    call("cudaDeviceSynchronize", 50'000, 0, tid);
    for (const Plan& p : plans) {
      execute(p, problem, tid, 0, ws_ptr);
      call("cudaDeviceSynchronize", ms_ns(p.ms), 0, tid);
      call("cudaEventRecord", 1000, 0, tid).hex("event", 0x10).stream = 0;
      execute(p, problem, tid, 0, ws_ptr);
      call("cudaEventRecord", 1000, 0, tid).hex("event", 0x20).stream = 0;
      call("cudaEventSynchronize", ms_ns(p.ms), 0, tid).hex("event", 0x20);
      call("cudaEventElapsedTime", 1000, 0, tid).f("ms", p.ms).hex("start", 0x10).hex("end", 0x20);
    }
    call("cudaEventDestroy", 1000, 0, tid).hex("event", 0x10);
    call("cudaEventDestroy", 1000, 0, tid).hex("event", 0x20);
    free(ws_ptr);
    const Plan& best = plans.at(winner);
    run(best, problem, tid);
    return best;
  }

  void execute(const Plan& p, const Problem& problem, uint32_t tid, int32_t ret, uint64_t ws_ptr) {
    with_problem(call("cudnnBackendExecute", ms_ns(p.ms), ret, tid).i("plan", p.id), problem)
        .i("engine", p.engine)
        .text("knobs", p.knobs)
        .i("workspace", int64_t(p.ws))
        .hex("ws_ptr", ws_ptr)
        .i("align", 256);
  }
  void run(const Plan& p, const Problem& problem, uint32_t tid = 0, int32_t ret = 0) {
    execute(p, problem, tid, ret, 0);
  }
  void stream_sync(uint64_t dur_ns) { call("cudaStreamSynchronize", dur_ns).stream = 0; }

  // The process's environment as the shim records it: library versions (process properties, by
  // reader::property_name), its GPU, and the files it had mapped (written with stacks).
  Trace& property(const std::string& name, int64_t value) {
    properties_.emplace_back(name, value);
    return *this;
  }
  Trace& versions(int64_t cudnn, int64_t cudnn_cudart, int64_t runtime, int64_t driver) {
    return property("cuda_runtime_version", runtime)
        .property("cuda_driver_version", driver)
        .property("cudnn_version", cudnn)
        .property("cudnn_cudart_version", cudnn_cudart);
  }
  // PyTorch's, NCCL's and the NVIDIA driver's versions (trace property 11, "library_versions").
  Trace& libraries(std::string torch, std::string nccl, std::string nvidia_driver) {
    library_versions_ = {
        {"torch", std::move(torch)}, {"nccl", std::move(nccl)}, {"nvidia_driver", std::move(nvidia_driver)}};
    return *this;
  }
  Trace& gpu(std::string name, std::string cc) {
    gpu_name_ = std::move(name);
    gpu_cc_ = std::move(cc);
    return *this;
  }
  Trace& module(std::string path) {
    modules_.push_back(std::move(path));
    return *this;
  }
  // The GPU's UUID (default: one of its own per process); processes given the same share a GPU.
  Trace& uuid(std::string u) {
    uuid_ = std::move(u);
    return *this;
  }
  // What plan pinning did for one selection (a "pin" line, as dump writes it), now.
  Trace& pin(const std::string& outcome, const Problem& problem, int64_t engine, double search_ms) {
    if (!problem_index_.count(problem.text)) {
      problem_index_[problem.text] = problems_.size();
      problems_.push_back(problem);
    }
    cuprobe::jsonl::PinLine l;
    l.pid = l.tid = pid_;
    l.ts_ns = t_;
    l.outcome = outcome;
    l.problem = problem.text;
    l.hash = problem.hash;
    l.engine = engine;
    l.search_ms = search_ms;
    pins_.push_back(std::move(l));
    t_ += 1000;
    return *this;
  }
  // Ran under cuprobe's memory cap (record --mem-cap TEXT): the fault plan's last slot.
  Trace& mem_cap(std::string text) {
    mem_cap_ = std::move(text);
    return *this;
  }

  void write(const std::string& rel) const {
    fs::path path = fs::path(g_out) / rel;
    fs::create_directories(path.parent_path());
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
      std::perror(path.c_str());
      std::exit(1);
    }
    JsonLine j;
    j.begin();
    j.str("type", "process");
    j.num("pid", pid_);
    j.num("ppid", 1);
    j.str("host", host_);
    j.inum("rank", rank_);
    j.inum("local_rank", rank_);
    j.inum("world_size", rank_ >= 0 ? 2 : -1);
    j.raw("cmdline", "[" + JsonLine::quote("python3") + "," + JsonLine::quote("train.py") + "]");
    j.num("start_ns", 1'000'000'000);
    j.num("start_wall_ns", 1'796'000'000'000'000'000ull);
    j.str("state", state_);
    for (const auto& [name, value] : properties_) j.inum(name, value);
    if (!library_versions_.empty()) {
      JsonLine v;
      v.begin();
      for (const auto& [name, value] : library_versions_) v.str(name.c_str(), value);
      j.raw("library_versions", v.finish());
    }
    JsonLine dev;
    dev.begin();
    dev.num("index", 0);
    dev.str("name", gpu_name_);
    dev.num("total_mem", total_mem_);
    dev.str("uuid", uuid_.empty() ? "GPU-fixture-" + std::to_string(pid_) : uuid_);
    dev.str("pci_bus_id", "0000:18:00.0");
    dev.str("cc", gpu_cc_);
    j.raw("devices", "[" + std::string(dev.finish()) + "]");
    if (state_ != "incomplete" && state_ != "snapshot") j.num("end_ns", t_);
    if (stats_) {
      JsonLine s;
      s.begin();
      for (const auto& [name, v] : stats_->counters) s.num(name, v);
      j.raw("stats", s.finish());
    }
    j.end(f);
    if (!mem_cap_.empty()) {
      j.begin();
      j.str("type", "fault_rule");
      j.num("pid", pid_);
      j.num("index", trace::kFaultRuleSlots - 1);
      j.str("name", "mem-cap");
      j.str("rule", mem_cap_);
      j.str("scope", "process");
      j.num("matched", 0);
      j.num("injected", 0);
      j.end(f);
    }
    uint64_t base = 0x7E0000000000;
    for (const std::string& m : modules_) {
      cuprobe::jsonl::write_module_line(j, pid_, m, base, base + 0x400000, base, "", f);
      base += 0x1000000;
    }
    for (const Problem& p : problems_) cuprobe::jsonl::write_problem_line(j, pid_, p.hash, p.text, &p.desc, f);
    for (const CallLine& c : calls_) cuprobe::jsonl::write_call_line(j, c, f);
    for (const auto& l : pins_) cuprobe::jsonl::write_pin_line(j, l, f);
    if (std::fclose(f) != 0) {
      std::perror(path.c_str());
      std::exit(1);
    }
  }

 private:
  uint32_t pid_;
  int rank_;
  std::string host_;
  uint64_t total_mem_;
  std::string state_;
  std::optional<Stats> stats_;
  std::vector<std::pair<std::string, int64_t>> properties_;
  std::map<std::string, std::string> library_versions_;
  std::string gpu_name_ = "NVIDIA H100";
  std::string gpu_cc_ = "9.0";
  std::string uuid_;
  std::string mem_cap_;
  std::vector<std::string> modules_;
  uint64_t t_ = 1'000'000'000;
  uint64_t next_ptr_ = 0x7F0000000000;
  int64_t next_desc_ = 100;
  std::vector<CallLine> calls_;
  std::vector<Problem> problems_;
  std::map<std::string, size_t> problem_index_;
  std::vector<cuprobe::jsonl::PinLine> pins_;
};

const std::vector<Candidate> kCandidates = {{38, "tile_size=8,stages=4", 2 * kMiB, 0.40, 0},
                                            {67, "tile_size=5,tilek=0", 1 * kMiB, 0.31, 0},
                                            {41, "tile_size=8,split_k_slc=32", 8 * kMiB, 0.55, 0},
                                            {25, "tile_size=2", 0, 0.90, 3000},
                                            {28, "tile_size=4,stages=3", 4 * kMiB, 0.36, 0}};

// One training step of a three-layer network on side x side images; searches the layers whose
// problem has not been searched yet (cudnn.benchmark's cache).
void network(Trace& t, int64_t side, std::map<std::string, Plan>& searched, int64_t batch = 32) {
  struct Layer {
    int64_t cin, cout;
    int stride;
  };
  for (const Layer& l : {Layer{3, 64, 1}, Layer{64, 64, 1}, Layer{64, 128, 2}}) {
    Problem problem = layer(batch, side, l.cin, l.cout, l.stride);
    auto it = searched.find(problem.text);
    if (it == searched.end()) {
      searched.emplace(problem.text, *t.search(problem, kCandidates, 1));
    } else {
      t.run(it->second, problem);
    }
    if (l.stride == 2) side = (side + 1) / 2;
  }
  t.stream_sync(2'000'000);
  t.wait(10'000'000);
}

void steps(Trace& t, const Plan& plan, const Problem& problem, int n, uint64_t step_ns = 40'000'000) {
  for (int i = 0; i < n; ++i) {
    t.run(plan, problem);
    t.stream_sync(2'000'000);
    t.wait(step_ns);
  }
}

// `rounds` steps, each running every plan once in order (a model whose layers each have a plan).
void interleaved_steps(Trace& t, const std::vector<std::pair<Plan, Problem>>& plans, int rounds) {
  for (int step = 0; step < rounds; ++step) {
    for (const auto& [plan, problem] : plans) steps(t, plan, problem, 1);
  }
}

Trace research_storm() {
  {
    Trace fire(1001);
    for (int64_t side = 160; side < 160 + 32 * 8; side += 8) {  // a new image size every step
      Problem problem = conv(64, side);
      Plan plan = *fire.search(problem, kCandidates, 1);
      steps(fire, plan, problem, 1);
    }
    fire.write("research-storm/fire/random_sizes.jsonl");
  }
  {
    // A network on images of sizes drawn from 12 (the draw hits 4 of them): the first size comes
    // back early, so warm-up ends at the second step, and searches go on after it until every
    // size was seen; then they stop. Shape buckets: research-storm says so, at info.
    Trace fire(1003);
    std::map<std::string, Plan> searched;
    std::vector<int64_t> sizes;
    for (int64_t s = 96; s < 192; s += 8) sizes.push_back(s);
    for (int64_t k = 0; k < 30; ++k) {
      network(fire, k > 0 ? sizes[size_t((k * 7 + k * k) % int64_t(sizes.size()))] : sizes[0], searched);
    }
    fire.write("research-storm/quiet/network_four_sizes.jsonl");
  }
  {
    // The same network on one size, after a slow start (8 s of setup before the first step):
    // its searches fall after the first fifth of the run but all within the first step.
    Trace slow(1004);
    for (int i = 0; i < 40; ++i) {
      slow.malloc(2 * kMiB);
      slow.wait(200'000'000);
    }
    std::map<std::string, Plan> searched;
    for (int k = 0; k < 40; ++k) network(slow, 160, searched);
    slow.write("research-storm/quiet/slow_start_fixed_size.jsonl");
  }
  {
    // `cuprobe snapshot` of a running job during its first step (seen on the H200 with two DDP
    // ranks): after 8 s of setup, the first step's searches, and no second step yet. Nothing to
    // judge: the same trace finished would show the searches all in its first step.
    Trace cut(1005, -1, "node0", 80 * kGiB, "snapshot");
    for (int i = 0; i < 40; ++i) {
      cut.malloc(2 * kMiB);
      cut.wait(200'000'000);
    }
    // The first step: twelve layers, each searched when it first runs.
    for (int64_t layer = 0; layer < 12; ++layer) {
      Problem problem = conv(32, 64 - 4 * layer);
      Plan plan = *cut.search(problem, kCandidates, 1);
      steps(cut, plan, problem, 1);
    }
    cut.write("research-storm/quiet/snapshot_in_first_step.jsonl");
  }
  Trace quiet(1002);
  std::vector<std::pair<Plan, Problem>> plans;
  for (int64_t side : {224, 192, 160}) {  // three fixed sizes, searched once each
    Problem problem = conv(64, side);
    plans.emplace_back(*quiet.search(problem, kCandidates, 1), problem);
  }
  for (int k = 0; k < 120; ++k) {
    const auto& [plan, problem] = plans[size_t(k % 3)];
    steps(quiet, plan, problem, 1);
  }
  quiet.write("research-storm/quiet/fixed_sizes.jsonl");
  return quiet;
}

// research-storm's patterns (issue 13): networks trained forward and backward, 1-D convolutions
// as PyTorch hands them to cuDNN (x[N,C,1,L], a 1xk filter), evaluation and partial batches, a
// long interpreter start-up before the first work.
namespace storm {

// One convolution layer: channels, filter size, stride.
struct ConvLayer {
  int64_t cin, cout, k;
  int stride;
};

// A convolution problem of one layer: `op` forward (x w -> y), dgrad (dy w -> dx) or wgrad
// (x dy -> dw). `one_d`: a 1-D convolution as PyTorch hands it to cuDNN (height 1, a 1xk filter,
// no padding, stride or dilation in that height); else square k x k on h x w.
Problem conv_op(trace::ProblemOp op, const ConvLayer& l, int64_t batch, int64_t h, int64_t w, bool one_d) {
  Problem p;
  trace::ProblemDesc& d = p.desc;
  d.op = uint16_t(op);
  d.flags = trace::kProblemHasConv;
  d.math_type = -1;
  d.n_tensors = 3;
  int64_t kh = one_d ? 1 : l.k;
  int64_t pad = l.k / 2;
  int64_t oh = one_d ? 1 : (h + 2 * pad - kh) / l.stride + 1;
  int64_t ow = (w + 2 * pad - l.k) / l.stride + 1;
  trace::ProblemTensor x{}, wt{}, y{};
  packed_nchw(x, trace::TensorRole::kX, CUDNN_DATA_FLOAT, batch, l.cin, one_d ? 1 : h, w);
  packed_nchw(wt, trace::TensorRole::kW, CUDNN_DATA_FLOAT, l.cout, l.cin, kh, l.k);
  packed_nchw(y, trace::TensorRole::kY, CUDNN_DATA_FLOAT, batch, l.cout, oh, ow);
  if (op == trace::ProblemOp::kConvFwd) {
    d.tensors[0] = x, d.tensors[1] = wt, d.tensors[2] = y;
  } else if (op == trace::ProblemOp::kConvDgrad) {
    y.role = uint8_t(trace::TensorRole::kDy);
    x.role = uint8_t(trace::TensorRole::kDx);
    d.tensors[0] = y, d.tensors[1] = wt, d.tensors[2] = x;
  } else {
    y.role = uint8_t(trace::TensorRole::kDy);
    wt.role = uint8_t(trace::TensorRole::kDw);
    d.tensors[0] = x, d.tensors[1] = y, d.tensors[2] = wt;
  }
  trace::ProblemConv& c = d.conv;
  c.mode = CUDNN_CROSS_CORRELATION;
  c.compute = CUDNN_DATA_FLOAT;
  c.spatial = 2;
  c.groups = 1;
  for (int i = 0; i < 2; ++i) {
    bool dummy = one_d && i == 0;
    c.pre[i] = c.post[i] = dummy ? 0 : int32_t(pad);
    c.stride[i] = dummy ? 1 : l.stride;
    c.dilation[i] = 1;
  }
  char buf[512];
  size_t n = cuprobe::render_problem(d, buf, sizeof buf);
  p.text.assign(buf, n < sizeof buf ? n : sizeof buf - 1);
  p.hash = trace::problem_hash(d);
  return p;
}

const std::vector<ConvLayer> kNet2d = {{3, 64, 3, 1}, {64, 64, 3, 1}, {64, 128, 3, 2}};
const std::vector<ConvLayer> kNet2dDeep = {{3, 64, 3, 1},    {64, 64, 3, 1},   {64, 128, 3, 2},
                                           {128, 128, 3, 1}, {128, 256, 3, 2}, {256, 256, 3, 1}};
const std::vector<ConvLayer> kNet1d = {{64, 128, 5, 1}, {128, 128, 5, 2}, {128, 256, 5, 2}};
const std::vector<ConvLayer> kNet1dSmall = {{64, 128, 5, 1}, {128, 128, 5, 2}};
// Two candidates per search: the storm fixtures search a lot, and stay small.
const std::vector<Candidate> kTwo = {{38, "tile_size=8,stages=4", 2 * kMiB, 0.40, 0},
                                     {67, "tile_size=5,tilek=0", 1 * kMiB, 0.31, 0}};

// One step of a network on inputs h x w (one_d: length w): every layer forward, then, when
// training, backward (wgrad of every layer, dgrad of all but the first). Problems not searched
// yet are searched (cudnn.benchmark's cache), the others run.
void step(Trace& t, const std::vector<ConvLayer>& net, int64_t batch, int64_t h, int64_t w, bool one_d, bool train,
          std::map<std::string, Plan>& searched, uint64_t rest_ns = 30'000'000) {
  auto run = [&](const Problem& problem) {
    auto it = searched.find(problem.text);
    if (it == searched.end()) {
      searched.emplace(problem.text, *t.search(problem, kTwo, 1));
    } else {
      t.run(it->second, problem);
    }
  };
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (const ConvLayer& l : net) {
    sizes.emplace_back(h, w);
    run(conv_op(trace::ProblemOp::kConvFwd, l, batch, h, w, one_d));
    if (!one_d) h = (h + l.stride - 1) / l.stride;
    w = (w + l.stride - 1) / l.stride;
  }
  if (train) {
    for (size_t i = net.size(); i-- > 0;) {
      if (i > 0) run(conv_op(trace::ProblemOp::kConvDgrad, net[i], batch, sizes[i].first, sizes[i].second, one_d));
      run(conv_op(trace::ProblemOp::kConvWgrad, net[i], batch, sizes[i].first, sizes[i].second, one_d));
    }
  }
  t.stream_sync(2'000'000);
  t.wait(rest_ns);
}

// The interpreter's start-up: imports that query the device and wait, no work.
void startup(Trace& t, int queries, uint64_t each_ns) {
  for (int i = 0; i < queries; ++i) {
    t.call("cudaGetDeviceCount", 2'000);
    t.wait(each_ns);
  }
}

void fixtures() {
  {
    // A 1-D convolution network on inputs of two fixed lengths, alternating (two buckets): every
    // problem searched in the first two steps, then 120 steps without a search.
    Trace quiet(1011);
    std::map<std::string, Plan> searched;
    for (int k = 0; k < 120; ++k) step(quiet, kNet1d, 16, 1, k % 2 ? 16000 : 8000, true, true, searched);
    quiet.write("research-storm/quiet/two_buckets_1d.jsonl");
  }
  {
    // Batch 64 over 616 samples, 4 epochs without drop_last: each epoch's 10th step is a batch of
    // 40, searched in the first epoch only.
    Trace quiet(1012);
    std::map<std::string, Plan> searched;
    for (int epoch = 0; epoch < 4; ++epoch) {
      for (int k = 0; k < 10; ++k) step(quiet, kNet2d, k < 9 ? 64 : 40, 64, 64, false, true, searched);
    }
    quiet.write("research-storm/quiet/last_partial_batch.jsonl");
  }
  {
    // One epoch of 1,000 images at batch 64 (pytorch/examples dcgan, seen on an H100): the last
    // step's batch of 40 is searched at the very end, costing much of the last half's time, but
    // in one step of it: a one-off, not a storm.
    Trace quiet(1017);
    std::map<std::string, Plan> searched;
    for (int k = 0; k < 16; ++k) step(quiet, kNet2d, k < 15 ? 64 : 40, 64, 64, false, true, searched);
    quiet.write("research-storm/quiet/one_epoch_partial_batch.jsonl");
  }
  {
    // Training at batch 32; every 20 steps an evaluation (forward only, no_grad) of 3 batches of
    // 128: the evaluation's problems are searched once.
    Trace quiet(1013);
    std::map<std::string, Plan> searched;
    for (int k = 1; k <= 60; ++k) {
      step(quiet, kNet2dDeep, 32, 64, 64, false, true, searched);
      if (k % 20 == 0) {
        for (int e = 0; e < 3; ++e) step(quiet, kNet2dDeep, 128, 64, 64, false, false, searched);
      }
    }
    quiet.write("research-storm/quiet/evaluation_batch.jsonl");
  }
  {
    // 3 s of interpreter start-up (device queries at import), then a one-layer model on 8 fixed
    // sizes searched at once (expensive candidates), then 240 short steps. Measured from the
    // process's start, warm-up (a fifth of the span) would end before the first work and every
    // search would be "late"; measured from the job's first work, none is.
    Trace quiet(1014);
    startup(quiet, 30, 100'000'000);
    const std::vector<Candidate> slow = {{38, "tile_size=8,stages=4", 2 * kMiB, 5.0, 0},
                                         {67, "tile_size=5,tilek=0", 1 * kMiB, 4.0, 0},
                                         {41, "tile_size=8,split_k_slc=32", 8 * kMiB, 6.0, 0},
                                         {28, "tile_size=4,stages=3", 4 * kMiB, 4.5, 0}};
    std::vector<std::pair<Plan, Problem>> plans;
    for (int64_t side = 96; side < 96 + 8 * 16; side += 16) {
      Problem problem = conv(32, side);
      plans.emplace_back(*quiet.search(problem, slow, 1), problem);
    }
    for (int k = 0; k < 240; ++k) {
      const auto& [plan, problem] = plans[size_t(k % 8)];
      steps(quiet, plan, problem, 1, 10'000'000);
    }
    quiet.write("research-storm/quiet/long_startup.jsonl");
  }
  {
    // A 2-D network served on a new (H, W) every step (forward only), through the whole run.
    Trace fire(1015);
    std::map<std::string, Plan> searched;
    for (int k = 0; k < 24; ++k) {
      step(fire, kNet2d, 32, 64 + (k * 37) % 320, 64 + (k * 53 + 11) % 320, false, false, searched);
    }
    fire.write("research-storm/fire/unbounded_2d.jsonl");
  }
  {
    // A 1-D network trained on a new length every step (4000..64000), after a start-up.
    Trace fire(1016);
    startup(fire, 10, 100'000'000);
    std::map<std::string, Plan> searched;
    for (int k = 0; k < 16; ++k) step(fire, kNet1dSmall, 16, 1, 4000 + (k * 7919) % 60000, true, true, searched);
    fire.write("research-storm/fire/unbounded_1d.jsonl");
  }
  // Detection-style training (issue 28): two images a step from six sizes through a backbone,
  // then a head on 14x14 RoI crops whose count follows the step's proposals. With the count
  // padded to 64 the head has one shape and the six sizes are buckets, searched in the first six
  // steps; with the raw count the head's batch is a dynamic dimension: a storm, whatever the
  // backbone's buckets say.
  const std::vector<ConvLayer> head = {{64, 96, 3, 1}, {96, 96, 3, 1}};
  const int64_t sizes[6][2] = {{60, 80}, {64, 64}, {72, 96}, {80, 60}, {88, 88}, {96, 72}};
  for (bool padded : {false, true}) {
    Trace t(padded ? 1018 : 1017);
    std::map<std::string, Plan> searched;
    for (int k = 0; k < 24; ++k) {
      const int64_t* s = sizes[(k * 5) % 6];
      step(t, kNet2d, 2, s[0], s[1], false, true, searched, 5'000'000);
      step(t, head, padded ? 64 : 4 + (k * 37) % 150, 14, 14, false, true, searched);
    }
    t.write(padded ? "research-storm/quiet/detection_padded_proposals.jsonl"
                   : "research-storm/fire/detection_dynamic_batch.jsonl");
  }
}

}  // namespace storm

void research_repeat(const Trace& healthy) {
  {
    Trace fire(1101);
    Problem problem = conv(32, 56);
    for (int rep = 0; rep < 4; ++rep) {  // the cache keeps losing it
      Plan plan = *fire.search(problem, kCandidates, 1);
      steps(fire, plan, problem, 30);
    }
    fire.write("research-repeat/fire/evicted.jsonl");
  }
  {
    // The same shape with its data at 16-, 64- and 256-byte alignment (views into a larger
    // buffer): three cache entries, three searches.
    Trace fire(1102);
    Problem problem = conv(32, 56);
    const int64_t aligns[3] = {16, 64, 256};
    for (int rep = 0; rep < 6; ++rep) {
      Plan plan = *fire.search(problem, kCandidates, 1, true, 0, {}, rep < 3 ? aligns[rep % 3] : 256);
      steps(fire, plan, problem, 10);
    }
    fire.write("research-repeat/fire/alignment.jsonl");
  }
  {
    // PyTorch's plan cache is per thread: a problem the forward pass runs on the main thread and
    // the backward pass on autograd's (a transposed convolution's gradient is a forward
    // convolution) is searched once on each, then never again: a one-off, information only.
    Trace quiet(1103);
    Problem problem = conv(32, 56), other = conv(32, 28);
    Plan plan = *quiet.search(problem, kCandidates, 1);
    Plan again = *quiet.search(problem, kCandidates, 1, true, 1103 + 1);
    Plan plan2 = *quiet.search(other, kCandidates, 1);
    Plan again2 = *quiet.search(other, kCandidates, 1, true, 1103 + 1);
    for (int k = 0; k < 30; ++k) {
      steps(quiet, plan, problem, 1);
      steps(quiet, again, problem, 1);
      steps(quiet, plan2, other, 1);
      steps(quiet, again2, other, 1);
    }
    quiet.write("research-repeat/quiet/per_thread_cache.jsonl");
  }
  healthy.write("research-repeat/quiet/searched_once.jsonl");
}

void workspace_blowup() {
  Problem problem = conv(256, 112);
  Trace fire(1201, -1, "node0", 80 * kGiB);
  std::vector<Candidate> cands = {
      {12, "tile_size=1", 40 * kGiB, 1.00, 0}, {38, "tile_size=8", 64 * kMiB, 1.02, 0}, {0, "", 0, 3.0, 0}};
  Plan plan = *fire.search(problem, cands, 0);
  steps(fire, plan, problem, 20);
  fire.write("workspace-blowup/fire/huge_workspace.jsonl");
  Trace quiet(1202, -1, "node0", 80 * kGiB);
  cands = {{12, "tile_size=1", 16 * kMiB, 1.00, 0}, {38, "tile_size=8", 8 * kMiB, 1.02, 0}};
  plan = *quiet.search(problem, cands, 0);
  steps(quiet, plan, problem, 20);
  quiet.write("workspace-blowup/quiet/small_workspace.jsonl");
  {
    // Measured on the H200 (pytorch/examples dcgan): a transposed convolution's search allocates
    // 2.5 GiB for tensors of ~10 MiB. Harmless on 140 GiB; on a card of 8 GiB (the memory cap
    // stands for one), a third of the memory.
    Problem small = conv(64, 8, 256);
    Trace capped(1203, -1, "node0", 140 * kGiB);
    capped.mem_cap("8GiB");
    std::vector<Candidate> c = {{67, "tile_size=5", 0, 0.05, 0}, {50, "tile_size=1", 2560 * kMiB, 0.09, 0}};
    Plan p = *capped.search(small, c, 0);
    steps(capped, p, small, 20);
    capped.write("workspace-blowup/fire/search_workspace_on_a_small_card.jsonl");
    Trace roomy(1204, -1, "node0", 140 * kGiB);
    p = *roomy.search(small, c, 0);
    steps(roomy, p, small, 20);
    roomy.write("workspace-blowup/quiet/search_workspace_on_a_large_card.jsonl");
  }
  {
    // A huge batch: the workspaces are large for the device but smaller than the problem's own
    // tensors (2 x 16 GiB); the batch is what takes the memory, not the workspace.
    Problem huge = conv(8192, 128, 32);
    Trace t(1205, -1, "node0", 80 * kGiB);
    std::vector<Candidate> c = {{38, "tile_size=1", 10 * kGiB, 40.0, 0}, {12, "tile_size=2", 24 * kGiB, 41.0, 0}};
    Plan p = *t.search(huge, c, 0);
    steps(t, p, huge, 10, 100'000'000);
    t.write("workspace-blowup/quiet/workspace_smaller_than_the_batch.jsonl");
  }
  {
    // Seen on an H100 (80 GiB), oom-caught: x[4096,32,128,128] and its output are 16 GiB, and the
    // fastest plan needs as much workspace (a transformed copy of them), a fifth of the device; a
    // search request failed once. A workspace of the tensors' own size is the batch's too.
    Problem big = conv(4096, 128, 32);
    Trace t(1206, -1, "node0", 80 * kGiB);
    std::vector<Candidate> c = {{38, "tile_size=1", 16 * kGiB + kMiB, 40.0, 0}, {12, "tile_size=2", kGiB, 60.0, 0}};
    t.halve_workspace_once = true;
    Plan p = *t.search(big, c, 0);
    steps(t, p, big, 10, 100'000'000);
    t.write("workspace-blowup/quiet/workspace_as_large_as_the_batch.jsonl");
  }
}

void algo_divergence() {
  Problem problem = conv(64, 56);
  const std::pair<const char*, std::vector<int64_t>> kinds[2] = {{"fire", {67, 28}}, {"quiet", {67, 67}}};
  for (const auto& [kind, engines] : kinds) {
    bool quiet = std::string(kind) == "quiet";
    for (int rank = 0; rank < int(engines.size()); ++rank) {
      int64_t engine = engines[size_t(rank)];
      Trace t(uint32_t(1300 + rank + (quiet ? 10 : 0)), rank, "node" + std::to_string(rank));
      // Rank 1 took engine 28 though its own search timed 67 30% faster, as every rank did (a
      // choice no timing noise explains: PyTorch skips a candidate whose workspace it cannot
      // allocate, and 67's did not fit on rank 1). A single contradicting timing would not do:
      // on the GPU those are noise (quiet/contradicting-timings).
      std::vector<Candidate> cands = {{67, "tile_size=5,tilek=0", kMiB, 0.30, 0},
                                      {28, "tile_size=4,stages=3", kMiB, 0.39, 0}};
      size_t winner = engine == 67 ? 0 : 1;
      Plan plan = *t.search(problem, cands, winner);
      steps(t, plan, problem, 30);
      t.write(std::string("algo-divergence/") + kind + "/rank" + std::to_string(rank) + ".jsonl");
    }
  }
}

// A rank of a healthy job as PyTorch 2.11 wheels run it (FACTS.md): cuDNN 9.19 built for CUDA 13.0,
// runtime 13.0, a driver for 13.0, an H200.
Trace& cuda13_h200(Trace& t) { return t.versions(91900, 13000, 13000, 13000).gpu("NVIDIA H200", "9.0"); }

// Issue 13's scenarios: why ranks chose differently. Each directory below fire/ and quiet/ is one job.
void algo_divergence_causes() {
  Problem problem = conv(64, 56);
  {
    // Rank 1 ran with cudnn.benchmark off: it took the heuristics' first plan that ran, and timed
    // nothing; rank 0 timed both candidates.
    for (int rank = 0; rank < 2; ++rank) {
      Trace t(uint32_t(1320 + rank), rank, "node" + std::to_string(rank));
      cuda13_h200(t);
      std::vector<Candidate> cands = {{67, "tile_size=5,tilek=0", kMiB, 0.30, 0}, {28, "tile_size=4,stages=3", kMiB, 0.39, 0}};
      if (rank == 1) std::swap(cands[0], cands[1]);  // the heuristics' order
      Plan plan = *t.search(problem, cands, 0, rank == 0);
      steps(t, plan, problem, 10);
      if (rank == 1) {
        // DDP's runtime statistics time a whole step with two events of their own: a measured time
        // while the heuristic selection is still open, spanning many executions, not a candidate's.
        t.call("cudaEventRecord").hex("event", 0x30).stream = 0;
        steps(t, plan, problem, 3);
        t.call("cudaEventRecord").hex("event", 0x40).stream = 0;
        t.call("cudaEventSynchronize").hex("event", 0x40);
        t.call("cudaEventElapsedTime").f("ms", 120.0).hex("start", 0x30).hex("end", 0x40);
      }
      steps(t, plan, problem, 20);
      t.write("algo-divergence/fire/benchmark-off/rank" + std::to_string(rank) + ".jsonl");
    }
  }
  {
    // Both ranks benchmarked, on the same libraries and GPUs: the same engine with other tiles,
    // timed within 2% of each other, each rank measuring its own choice faster.
    for (int rank = 0; rank < 2; ++rank) {
      Trace t(uint32_t(1330 + rank), rank, "node" + std::to_string(rank));
      cuda13_h200(t);
      std::vector<Candidate> cands = {{67, "tile_size=5,tilek=0", kMiB, rank == 0 ? 0.300 : 0.306, 0},
                                      {67, "tile_size=4,tilek=1", kMiB, rank == 0 ? 0.305 : 0.301, 0},
                                      {28, "tile_size=4,stages=3", kMiB, 0.45, 0}};
      Plan plan = *t.search(problem, cands, size_t(rank));
      steps(t, plan, problem, 30);
      t.write("algo-divergence/quiet/near-ties/rank" + std::to_string(rank) + ".jsonl");
    }
  }
  {
    // Measured on one H200 shared by two healthy DDP ranks (docs/dev/validation.md, issue 13): the
    // differing problems' measurements all contradict (each rank timed its own choice faster), so
    // each rank's timing of its own choices adds up to more than 10% apart, while the candidates
    // both ranks timed were timed alike. quiet/: timing noise. fire/: rank 1 timed every candidate
    // 30% slower (its search was disturbed), and its choices add up to 30% more.
    const Problem problems[3] = {conv(32, 64, 32), conv(32, 32, 64), conv(64, 16, 128)};
    for (bool disturbed : {false, true}) {
      for (int rank = 0; rank < 2; ++rank) {
        Trace t(uint32_t(1340 + rank + (disturbed ? 10 : 0)), rank, "node0");
        cuda13_h200(t);
        double scale = disturbed && rank == 1 ? 1.3 : 1.0;
        std::vector<std::pair<Plan, Problem>> plans;
        for (size_t k = 0; k < 3; ++k) {
          std::vector<Candidate> cands = {{68, "tile_size=1,tilek=0", kMiB, 0.070, 0},
                                          {68, "tile_size=5,tilek=0", kMiB, 0.075, 0},
                                          {46, "tile_size=4,kblock=2", kMiB, 0.110, 0},
                                          {38, "tile_size=0,tilek=2", 0, 0.140, 0}};
          for (auto& c : cands) c.ms *= scale;
          size_t winner = 0;
          if (k == 0 && rank == 1) {  // the contradicting timings of one problem
            cands[0].ms = disturbed ? 0.095 : 0.064;
            cands[1].ms = disturbed ? 0.091 : 0.060;
            winner = 1;
          }
          plans.emplace_back(*t.search(problems[k], cands, winner), problems[k]);
        }
        interleaved_steps(t, plans, 20);
        t.write(std::string("algo-divergence/") + (disturbed ? "fire/disturbed-search" : "quiet/contradicting-timings") +
                "/rank" + std::to_string(rank) + ".jsonl");
      }
    }
  }
  {
    // Measured on one H200 shared by two healthy DDP ranks (docs/dev/validation.md, issue 25,
    // ddp-torchrun and ddp-spawn): one problem's engines differ and its measurements contradict,
    // one of them far off: rank 1 timed rank 0's engine 13 times slower than rank 0 did (a single
    // timing taken while the other rank's search ran), so the largest gap is past `clear_gap`,
    // while the chosen plans add up to within 3% and the candidates both timed were timed alike.
    // Timing noise: the processes do not even agree which engine is faster.
    const Problem problems[3] = {conv(32, 64, 32), conv(32, 32, 64), conv(64, 16, 128)};
    for (int rank = 0; rank < 2; ++rank) {
      Trace t(uint32_t(1360 + rank), rank, "node0");
      cuda13_h200(t);
      std::vector<std::pair<Plan, Problem>> plans;
      for (size_t k = 0; k < 3; ++k) {
        std::vector<Candidate> cands = {{68, "tile_size=1,tilek=0", kMiB, 0.070, 0},
                                        {68, "tile_size=5,tilek=0", kMiB, 0.075, 0},
                                        {46, "tile_size=4,kblock=2", kMiB, 0.072, 0},
                                        {38, "tile_size=0,tilek=2", 0, 0.140, 0}};
        size_t winner = 0;
        if (k == 0 && rank == 1) {  // engine 46 faster by its timing, rank 0's engine 68 an outlier
          cands[0].ms = 0.900;
          cands[2].ms = 0.068;
          winner = 2;
        }
        plans.emplace_back(*t.search(problems[k], cands, winner), problems[k]);
      }
      interleaved_steps(t, plans, 20);
      t.write("algo-divergence/quiet/contradicting-outlier/rank" + std::to_string(rank) + ".jsonl");
    }
  }
}

// env-drift: each file directly in fire/ is a process with a problem of its own; each directory a
// job whose ranks disagree. quiet/: a job whose ranks agree on everything.
void env_drift() {
  Problem problem = conv(64, 56);
  constexpr uint32_t kTensorCore = 1u << 0, kNondeterministic = 1u << 4;
  // The candidates of a float32 convolution as the filter lets them through: with deterministic
  // mode off, a non-deterministic engine; with TF32 on, tensor-core engines.
  auto candidates = [&](bool deterministic, bool tf32) {
    uint32_t tc = tf32 ? kTensorCore : 0;
    std::vector<Candidate> c = {{67, "tile_size=5,tilek=0", kMiB, 0.30, 0, tc}, {28, "tile_size=4,stages=3", kMiB, 0.39, 0, tc}};
    if (!deterministic) c.push_back({41, "split_k_slc=32", 8 * kMiB, 0.35, 0, kNondeterministic | tc});
    if (!tf32) c.push_back({2, "", 0, 0.60, 0, 0});
    return c;
  };
  auto train = [&](Trace& t, bool deterministic = false, bool tf32 = true) {
    Plan plan = *t.search(problem, candidates(deterministic, tf32), 0);
    steps(t, plan, problem, 20);
  };
  const std::string wheel = "/venv/lib/python3.12/site-packages/nvidia/";
  {
    // PyTorch's cuDNN wheel, and the system's libcudnn loaded beside it by another library.
    Trace t(2401, -1, "node0", 80 * kGiB, "exited", Stats{{{"duplicate_libraries", 2}}});
    cuda13_h200(t)
        .module(wheel + "cu13/lib/libcudart.so.13")
        .module(wheel + "cudnn/lib/libcudnn.so.9")
        .module(wheel + "cudnn/lib/libcudnn_graph.so.9")
        .module("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0")
        .module("/usr/lib/x86_64-linux-gnu/libcudnn_graph.so.9.14.0");
    train(t);
    t.write("env-drift/fire/duplicate_cudnn.jsonl");
  }
  {
    // nvidia-cudnn-cu12 under a CUDA 13 PyTorch.
    Trace t(2402);
    t.versions(91900, 12080, 13000, 13000).gpu("NVIDIA H200", "9.0");
    train(t);
    t.write("env-drift/fire/cudnn_for_cuda12.jsonl");
  }
  {
    // A CUDA 13 runtime on a driver that supports CUDA 12.4 at most.
    Trace t(2403);
    t.versions(91900, 13000, 13000, 12040).gpu("NVIDIA H200", "9.0");
    train(t);
    t.write("env-drift/fire/driver_too_old.jsonl");
  }
  for (int rank = 0; rank < 2; ++rank) {
    // Rank 1 found an older cuDNN first on its library path.
    Trace t(uint32_t(2410 + rank), rank, "node" + std::to_string(rank));
    t.versions(rank == 1 ? 91400 : 91900, 13000, 13000, 13000).gpu("NVIDIA H200", "9.0");
    train(t);
    t.write("env-drift/fire/cudnn-version/rank" + std::to_string(rank) + ".jsonl");
  }
  for (int rank = 0; rank < 2; ++rank) {
    // Rank 1 set torch.backends.cudnn.deterministic = True and allow_tf32 = False.
    Trace t(uint32_t(2420 + rank), rank, "node" + std::to_string(rank));
    cuda13_h200(t);
    train(t, rank == 1, rank == 0);
    t.write("env-drift/fire/settings/rank" + std::to_string(rank) + ".jsonl");
  }
  for (int rank = 0; rank < 2; ++rank) {
    // Rank 1's container has an older PyTorch wheel (its own CUDA 12.8 build); cuDNN the same.
    Trace t(uint32_t(2410 + rank), rank, "node" + std::to_string(rank));
    t.versions(91900, 13000, 13000, 13000).gpu("NVIDIA H200", "9.0");
    t.libraries(rank == 1 ? "2.10.0+cu128" : "2.11.0+cu130", "2.27.3", "580.159.04");
    train(t);
    t.write("env-drift/fire/torch-version/rank" + std::to_string(rank) + ".jsonl");
  }
  for (int rank = 0; rank < 2; ++rank) {
    Trace t(uint32_t(2430 + rank), rank, "node" + std::to_string(rank));
    cuda13_h200(t).module(wheel + "cu13/lib/libcudart.so.13").module(wheel + "cudnn/lib/libcudnn.so.9");
    t.libraries("2.11.0+cu130", "2.27.3", "580.159.04");
    train(t);
    t.write("env-drift/quiet/rank" + std::to_string(rank) + ".jsonl");
  }
}

// Issue 28: the only failure is a search's workspace request, which PyTorch halves and gets: the
// search's routine (info), not an out-of-memory story.
void oom_search_retry() {
  Trace t(1010, -1, "node0", 80 * kGiB);
  Problem problem = conv(64, 112);
  std::vector<Candidate> c = {{38, "tile_size=8", 100 * kGiB, 0.4, 0}, {67, "tile_size=5", 2 * kMiB, 0.5, 0}};
  t.halve_workspace_once = true;
  Plan plan = *t.search(problem, c, 0);
  steps(t, plan, problem, 20);
  t.write("oom-postmortem/quiet/search_workspace_halved.jsonl");
}

// Issue 28, seen on the H200 under PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: before each
// search PyTorch asks the pool for up to the whole device (failing, halving) and gives the block
// it got straight back; the candidates' own workspaces are small. Neither a search workspace of
// 65 GiB nor an out-of-memory failure: an allocator measuring its room.
void pool_probe_before_search() {
  Trace t(1018, -1, "node0", 140 * kGiB);
  Problem problem = conv(192, 56);
  std::vector<Candidate> c = {{38, "tile_size=8", 2 * kGiB, 0.4, 0}, {67, "tile_size=5", 2 * kMiB, 0.5, 0}};
  t.probe_pool_once = 130 * kGiB;
  Plan plan = *t.search(problem, c, 0);
  steps(t, plan, problem, 20);
  t.write("oom-postmortem/quiet/pool_probe_before_search.jsonl");
  t.write("workspace-blowup/quiet/pool_probe_before_search.jsonl");
}

void oom_postmortem() {
  oom_search_retry();
  pool_probe_before_search();
  {
    Trace fire(1401, -1, "node0", 24 * kGiB);
    std::vector<uint64_t> ptrs;
    for (int i = 0; i < 5; ++i) ptrs.push_back(fire.malloc(4 * kGiB));
    fire.wait(10'000'000);
    fire.malloc(6 * kGiB, 2);  // caching allocator: fails, flushes its cache, retries
    fire.call("cudaGetLastError", 1000, 2);
    for (size_t i = 3; i < ptrs.size(); ++i) fire.free(ptrs[i]);
    fire.malloc(6 * kGiB, 2);
    fire.call("cudaGetLastError", 1000, 2);
    fire.write("oom-postmortem/fire/out_of_memory.jsonl");
  }
  {
    // PyTorch with benchmark off: a plan's workspace cannot be had (fails, cache flushed, retry
    // fails), cuDNN moves on to a plan without workspace; then the activations of a bigger
    // batch do not fit and the job stops.
    Trace torch(1404, -1, "node0", 24 * kGiB);
    Problem problem = conv(512, 224);
    std::vector<uint64_t> segs;
    for (int i = 0; i < 5; ++i) segs.push_back(torch.malloc(4 * kGiB));
    torch.with_problem(torch.call("cudnnBackendFinalize", 150'000).i("desc", torch.desc()).i("kind", 15), problem)
        .i("engine", -1)
        .text("knobs", "")
        .i("workspace", 0)
        .hex("notes", 0)
        .hex("behavior", 0)
        .i("align", 16);
    int64_t big = torch.desc(), small = torch.desc();
    const std::tuple<int64_t, int64_t, uint64_t> plans[2] = {{big, 38, 6 * kGiB}, {small, 0, 0}};
    for (const auto& [plan, engine, ws] : plans) {
      torch.with_problem(torch.call("cudnnBackendFinalize", 200'000).i("desc", plan).i("kind", 5), problem)
          .i("engine", engine)
          .text("knobs", "")
          .i("workspace", int64_t(ws))
          .hex("notes", 0)
          .hex("behavior", 0)
          .i("align", 16);
    }
    torch.malloc(6 * kGiB, 2);
    torch.free(segs.back());
    segs.pop_back();
    torch.malloc(6 * kGiB, 2);
    torch.with_problem(torch.call("cudnnBackendExecute", 5'000'000).i("plan", small), problem)
        .i("engine", 0)
        .text("knobs", "")
        .i("workspace", 0)
        .hex("ws_ptr", 0)
        .i("align", 256);
    torch.malloc(2 * kGiB);
    torch.malloc(8 * kGiB, 2);
    torch.free(segs.back());
    segs.pop_back();
    torch.malloc(8 * kGiB, 2);
    torch.call("cudaGetLastError", 1000, 2);
    torch.write("oom-postmortem/fire/pytorch_fallback_then_fatal.jsonl");
  }
  {
    Trace killed(1402, -1, "node0", 80 * kGiB, "incomplete");
    killed.malloc(2 * kGiB);
    killed.stream_sync(1'000'000);
    killed.write("oom-postmortem/fire/killed.jsonl");
  }
  Trace quiet(1403, -1, "node0", 24 * kGiB);
  for (int i = 0; i < 3; ++i) quiet.malloc(2 * kGiB);
  quiet.write("oom-postmortem/quiet/fits.jsonl");
}

void unsupported_config() {
  {
    Trace fire(1501);
    Problem problem = conv(32, 64, 209, CUDNN_DATA_BFLOAT16);
    std::vector<Candidate> cands = {
        {38, "tile_size=8", kMiB, 0.4, 3000}, {67, "tile_size=5", kMiB, 0.3, 3000}, {25, "", 0, 0.9, 0}};
    fire.search(problem, cands, 0, false, 0, {25});  // nothing works
    fire.write("unsupported-config/fire/no_engine.jsonl");
  }
  Trace quiet(1502);
  Problem problem = conv(32, 64, 208, CUDNN_DATA_BFLOAT16);
  Plan plan = *quiet.search(problem, kCandidates, 1);  // one candidate rejected on the way: routine
  steps(quiet, plan, problem, 20);
  quiet.write("unsupported-config/quiet/routine_rejection.jsonl");
  // Issue 33: cuDNN attention. fire/: every plan of the forward graph refused (PyTorch raises
  // "cuDNN Frontend error"); quiet/: the heuristics' first plan refused and the second built, as
  // cuDNN does routinely, and the job goes on with it.
  const Candidate refused1{8, "kernel_cfg=22", 0, 2.0, 3000}, refused2{11, "kernel_cfg=5", 0, 2.5, 3000};
  {
    Trace t(1503);
    cuda13_h200(t);
    t.plan_build_ns = 60'000'000;
    t.search(attention(8, 12, 1024, false), {refused1, refused2}, 0, false);  // 12 heads: not channels
    t.write("unsupported-config/fire/attention_no_plan.jsonl");
  }
  Trace t(1504);
  cuda13_h200(t);
  t.plan_build_ns = 60'000'000;
  Problem fwd = attention(8, 16, 1024, false);
  Plan f = *t.search(fwd, {refused1, {11, "kernel_cfg=5", 0, 2.5, 0}}, 0, false);
  for (int step = 0; step < 20; ++step) {
    t.run(f, fwd);
    t.stream_sync(5'000'000);
  }
  t.write("unsupported-config/quiet/attention_routine_rejection.jsonl");
}

// Issue 28: what the calls are, told apart. torch.cuda.empty_cache() after each step gives four
// cached segments back in a burst and the next step takes the same sizes again (fire, kind
// empty_cache); expandable segments releasing and creating the same pages every step (fire,
// kind expandable segments); shapes growing until the device is full under the native allocator,
// whose frees come after failed requests (release and retry) and whose allocations are new,
// larger sizes (quiet: growth, info at most); the same growth under expandable segments, pages
// only ever added (quiet).
void allocation_churn_kinds() {
  {
    Trace fire(1605);
    for (int step = 0; step < 100; ++step) {
      std::vector<uint64_t> segs;
      for (uint64_t mib : {512, 256, 128, 40}) segs.push_back(fire.malloc(mib * kMiB, 0, 2'000'000));
      fire.stream_sync(5'000'000);
      for (uint64_t p : segs) fire.free(p, 1'500'000);
      fire.wait(20'000'000);
    }
    fire.write("allocation-churn/fire/empty_cache_bursts.jsonl");
  }
  {
    Trace fire(1606);
    uint64_t handle = 0x100;
    for (int step = 0; step < 100; ++step) {
      std::vector<uint64_t> made;
      for (int i = 0; i < 4; ++i) {
        fire.call("cuMemCreate", 400'000).hex("handle", ++handle).i("size", int64_t(20 * kMiB)).i("location_type", 1)
            .hex("handle_types", 1).hex("caller", 0x7e0000001000);
        made.push_back(handle);
      }
      fire.stream_sync(5'000'000);
      for (uint64_t h : made) fire.call("cuMemRelease", 300'000).hex("handle", h);
      fire.wait(20'000'000);
    }
    fire.write("allocation-churn/fire/expandable_remap.jsonl");
  }
  {
    Trace quiet(1607, -1, "node0", 80 * kGiB);
    std::vector<uint64_t> cached;
    double size = 64 * kMiB;
    for (int step = 0; step < 40; ++step, size *= 1.12) {
      uint64_t want = uint64_t(size) & ~uint64_t(2 * kMiB - 1);
      if (step % 8 == 7) {  // the device is full: the request fails, the cache is released, it is retried
        quiet.malloc(want, 2, 1'000'000);
        for (uint64_t p : cached) quiet.free(p, 1'500'000);
        cached.clear();
      }
      cached.push_back(quiet.malloc(want, 0, 3'000'000));
      cached.push_back(quiet.malloc(want / 2, 0, 3'000'000));
      quiet.stream_sync(5'000'000);
      quiet.wait(20'000'000);
    }
    quiet.write("allocation-churn/quiet/growth_with_retries.jsonl");
  }
  {
    Trace quiet(1608);
    uint64_t handle = 0x100;
    for (int step = 0; step < 60; ++step) {
      for (int i = 0; i < 3; ++i) {
        quiet.call("cuMemCreate", 400'000).hex("handle", ++handle).i("size", int64_t(20 * kMiB)).i("location_type", 1)
            .hex("handle_types", 1).hex("caller", 0x7e0000001000);
      }
      quiet.stream_sync(5'000'000);
      quiet.wait(20'000'000);
    }
    quiet.write("allocation-churn/quiet/expandable_growth.jsonl");
  }
}

void allocation_churn() {
  {
    Trace fire(1601);
    for (int step = 0; step < 100; ++step) {  // torch.cuda.empty_cache() inside the loop
      uint64_t p = fire.malloc(512 * kMiB, 0, 3'000'000);
      fire.stream_sync(5'000'000);
      fire.free(p, 2'000'000);
      fire.wait(20'000'000);
    }
    fire.write("allocation-churn/fire/empty_cache_in_loop.jsonl");
  }
  {
    Trace quiet(1602);
    for (int i = 0; i < 4; ++i) quiet.malloc(512 * kMiB);
    for (int step = 0; step < 100; ++step) {
      quiet.stream_sync(5'000'000);
      quiet.wait(20'000'000);
    }
    quiet.write("allocation-churn/quiet/cached.jsonl");
  }
  // The cache still growing after warm-up (new blocks, none given back): not churn.
  Trace growing(1603);
  for (int step = 0; step < 100; ++step) {
    growing.malloc(32 * kMiB, 0, 3'000'000);
    growing.stream_sync(5'000'000);
    growing.wait(20'000'000);
  }
  growing.write("allocation-churn/quiet/cache_growing.jsonl");
  // Churn that dies down (the allocator settling while new shapes are searched): reported at info.
  Trace settles(1604);
  for (int step = 0; step < 260; ++step) {
    if (step >= 10 && step < 70) {
      uint64_t p = settles.malloc(256 * kMiB, 0, 3'000'000);
      settles.free(p, 2'000'000);
    }
    settles.stream_sync(5'000'000);
    settles.wait(20'000'000);
  }
  settles.write("allocation-churn/quiet/settles.jsonl");
  allocation_churn_kinds();
}

// Plan pinning: a run whose every selection ended on the pinned plan (quiet: analyze's summary
// says so), one whose plan file came from another GPU model (fire), and one whose file the shim
// could not read (fire).
void plan_pinning() {
  std::vector<Problem> problems = {conv(64, 224), conv(64, 112), conv(64, 56)};
  {
    Trace t(1900);
    t.property("pinned_plans", 3);
    for (const Problem& p : problems) {
      Plan plan = *t.search(p, {kCandidates[1]}, 0);
      t.pin("pinned", p, kCandidates[1].engine, 42.5);
      steps(t, plan, p, 3);
    }
    t.write("plan-pinning/quiet/all_pinned.jsonl");
  }
  {
    Trace t(1901);
    t.property("pinned_plans", 3);
    for (const Problem& p : problems) {
      Plan plan = *t.search(p, kCandidates, 1);
      t.pin("other-gpu", p, -1, -1);
      steps(t, plan, p, 3);
    }
    t.write("plan-pinning/fire/other_gpu.jsonl");
  }
  {
    Trace t(1902);
    t.property("pinned_plans", 0);
    for (const Problem& p : problems) {
      Plan plan = *t.search(p, kCandidates, 1);
      steps(t, plan, p, 3);
    }
    t.write("plan-pinning/fire/unreadable_file.jsonl");
  }
}

void sync_stall() {
  struct Kind {
    const char* kind;
    uint64_t sync_ms, idle_ms;
    uint32_t pid;
    const char* name;
  };
  for (const Kind& k : {Kind{"fire", 90, 10, 1700, "item_every_step"}, Kind{"quiet", 5, 60, 1701, "overlapped"}}) {
    Trace t(k.pid);
    for (int step = 0; step < 50; ++step) {
      t.stream_sync(k.sync_ms * 1'000'000);
      t.wait(k.idle_ms * 1'000'000);
    }
    t.write(std::string("sync-stall/") + k.kind + "/" + k.name + ".jsonl");
  }
}

// A memory sample the shim took: the device's own account of what is in use.
void sample(Trace& t, uint64_t used, uint64_t total) {
  t.call("cudaMemGetInfo", 2'000).i("free", int64_t(total) - int64_t(used)).i("total", int64_t(total))
      .boolean("sample", true);
}

const char* const kOomReport = "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE";

// PyTorch with expandable_segments:True: 20 MiB pages created with cuMemCreate and mapped into one
// reserved range; a request of 8 GiB that does not fit fails part-way through its pages, is
// retried after the cache is released, and is reported by the allocator before it raises.
void expandable_oom() {
  const uint64_t total = 80 * kGiB, page = 20 * kMiB;
  Trace t(1801, -1, "node0", total);
  const uint64_t caller = 0x7e0000001000;
  t.call("cuMemAddressReserve", 30'000)
      .hex("ptr", 0x7f0000000000)
      .i("size", int64_t(90 * kGiB))
      .i("alignment", 0)
      .hex("addr", 0)
      .hex("flags", 0)
      .hex("caller", caller);
  sample(t, 600 * kMiB, total);
  uint64_t next_handle = 0x100;
  uint64_t va = 0x7F0000000000;
  auto create = [&](uint64_t handle, int32_t ret) {
    t.call("cuMemCreate", 40'000, ret)
        .hex("handle", handle)
        .i("size", int64_t(page))
        .i("location_type", 1)
        .hex("handle_types", 1)
        .hex("caller", caller);
  };
  auto create_and_map = [&](uint64_t pages) {
    std::vector<uint64_t> made;
    for (uint64_t i = 0; i < pages; ++i) {
      uint64_t h = next_handle++;
      create(h, 0);
      made.push_back(h);
    }
    for (uint64_t h : made) {
      t.call("cuMemMap", 5'000).hex("ptr", va).i("size", int64_t(page)).i("offset", 0).hex("handle", h);
      va += page;
    }
    t.call("cuMemSetAccess", 10'000)
        .hex("ptr", va - page * pages)
        .i("size", int64_t(page * pages))
        .i("count", 1)
        .i("access_device", 0);
  };
  for (int i = 0; i < 3; ++i) {  // 3 x 24 GiB of activations
    create_and_map(24 * kGiB / page);
    t.wait(50'000'000);
  }
  sample(t, 600 * kMiB + 72 * kGiB, total);
  auto failing_burst = [&] {
    std::vector<uint64_t> made;
    for (int i = 0; i < 300; ++i) {  // 6 GiB of the 8 GiB fit
      uint64_t h = next_handle++;
      create(h, 0);
      made.push_back(h);
    }
    create(0, 2);
    sample(t, 600 * kMiB + 78 * kGiB + 300 * page, total);  // more than the device has: free < 0
    for (uint64_t h : made) t.call("cuMemRelease", 20'000).hex("handle", h);
  };
  failing_burst();
  failing_burst();  // the retry after the cache was released
  t.call("cudaMemGetInfo", 3'000).i("free", int64_t(total - 72 * kGiB - 600 * kMiB)).i("total", int64_t(total));
  t.call(kOomReport, 1'000)
      .i("size", int64_t(8 * kGiB))
      .i("allocated", int64_t(72 * kGiB))
      .i("reserved", int64_t(72 * kGiB))
      .i("device_type", 1);
  t.write("oom-postmortem/fire/expandable_segments.jsonl");
}

// Issue 13: the causes an expert names for an out-of-memory failure, from the allocator's own
// report (bytes in tensors, bytes reserved).
void oom_causes() {
  {
    // Fragmentation (measured on the H200 under a 6 GiB cap): 290 segments of 20 MiB, each still
    // holding one live 6 MiB tensor; a 1 GiB request fails although 3.96 GiB of the cache is free.
    Trace t(1405, -1, "node0", 6 * kGiB);
    for (int i = 0; i < 290; ++i) t.malloc(20 * kMiB);
    t.malloc(kGiB, 2);
    t.call("cudaGetLastError", 1000, 2);
    t.malloc(kGiB, 2);  // the retry after freeing the (empty) cached segments: there are none
    t.call("cudaGetLastError", 1000, 2);
    t.call(kOomReport, 1'000)
        .i("size", int64_t(kGiB))
        .i("allocated", int64_t(290 * 6 * kMiB))
        .i("reserved", int64_t(290 * 20 * kMiB))
        .i("device_type", 1);
    t.write("oom-postmortem/fire/fragmentation.jsonl");
  }
  {
    // One request larger than the whole device (a wrong shape): nothing else was in the way.
    Trace t(1406, -1, "node0", 24 * kGiB);
    t.malloc(2 * kGiB);
    t.malloc(400 * kGiB, 2);
    t.call("cudaGetLastError", 1000, 2);
    t.malloc(400 * kGiB, 2);
    t.call("cudaGetLastError", 1000, 2);
    t.call(kOomReport, 1'000)
        .i("size", int64_t(400 * kGiB))
        .i("allocated", int64_t(2 * kGiB))
        .i("reserved", int64_t(2 * kGiB))
        .i("device_type", 1);
    t.write("oom-postmortem/fire/request_too_large.jsonl");
  }
}

void memory_coverage() {
  const uint64_t total = 80 * kGiB;
  {
    // 20 GiB in use on the device that no recorded call allocated (another process, a static runtime).
    Trace fire(1901, -1, "node0", total);
    sample(fire, 500 * kMiB, total);
    uint64_t p = fire.malloc(10 * kGiB);
    sample(fire, 500 * kMiB + 10 * kGiB, total);
    for (int step = 0; step < 20; ++step) {
      fire.stream_sync(5'000'000);
      fire.wait(20'000'000);
    }
    sample(fire, 500 * kMiB + 30 * kGiB, total);
    fire.free(p);
    fire.write("memory-coverage/fire/unseen_allocation.jsonl");
  }
  // Everything seen: the cache grows, the device's account follows it (plus a little context growth).
  Trace quiet(1902, -1, "node0", total);
  sample(quiet, 500 * kMiB, total);
  for (uint64_t step = 0; step < 20; ++step) {
    quiet.malloc(1 * kGiB);
    sample(quiet, 500 * kMiB + (step + 1) * kGiB + 150 * kMiB, total);
  }
  quiet.write("memory-coverage/quiet/all_seen.jsonl");
  // Two ranks of one job on one GPU: each sees the other's 10 GiB in the device's account.
  for (int rank = 0; rank < 2; ++rank) {
    Trace t(uint32_t(1903 + rank), rank, "node0", total);
    t.uuid("GPU-shared-by-two-ranks");
    sample(t, 500 * kMiB, total);
    t.malloc(10 * kGiB);
    sample(t, 500 * kMiB + 10 * kGiB, total);
    for (int step = 0; step < 20; ++step) {
      t.stream_sync(5'000'000);
      t.wait(20'000'000);
    }
    sample(t, 500 * kMiB + 20 * kGiB, total);
    t.write("memory-coverage/quiet/two_ranks_one_gpu/rank" + std::to_string(rank) + ".jsonl");
  }
  // Issue 28: PyTorch's cudaMallocAsync backend on growing activations. The pool keeps every
  // freed block reserved and reuses none for the larger requests: 1 + 2 + ... + 8 GiB = 36 GiB
  // reserved for a peak of 8 GiB live. The shim's pool samples (cudaMemPoolGetAttribute, just
  // before each device sample) say so: all seen.
  Trace pool(1905, -1, "node0", total);
  const uint64_t handle = 0x7f5500001000;
  auto pool_sample = [&](uint64_t reserved, uint64_t used) {
    pool.call("cudaMemPoolGetAttribute", 500).hex("pool", handle).i("attr", 5).i("value", int64_t(reserved))
        .boolean("sample", true);
    pool.call("cudaMemPoolGetAttribute", 500).hex("pool", handle).i("attr", 7).i("value", int64_t(used))
        .boolean("sample", true);
  };
  sample(pool, 500 * kMiB, total);
  uint64_t reserved = 0;
  for (uint64_t gib = 1; gib <= 8; ++gib) {
    reserved += gib * kGiB;
    uint64_t ptr = 0x7f6000000000 + gib * 16 * kGiB;
    pool.call("cudaMallocAsync", 20'000).hex("ptr", ptr).i("size", int64_t(gib * kGiB)).hex("caller", 0);
    pool_sample(reserved, gib * kGiB);
    sample(pool, 500 * kMiB + reserved, total);
    pool.wait(30'000'000);
    pool.call("cudaFreeAsync", 5'000).hex("ptr", ptr);
  }
  pool.write("memory-coverage/quiet/pool_keeps_freed_memory.jsonl");
}

void trace_integrity() {
  auto training = [](Trace& t, int n) {
    Problem problem = conv(32, 56);
    Plan plan = *t.search(problem, {{1, "", 1 * kMiB, 0.4, 0}, {2, "", 2 * kMiB, 0.3, 0}}, 1);
    for (int step = 0; step < n; ++step) {
      t.run(plan, problem);
      t.stream_sync(2'000'000);
      t.wait(30'000'000);
    }
  };
  // The trace reached its size limit: 90% of the calls the process made were never written.
  Trace fire(2001, -1, "node0", 80 * kGiB, "exited", Stats{{{"dropped_events", 9000}, {"trace_limit_hit", 1}}});
  training(fire, 100);
  fire.write("trace-integrity/fire/size_limit.jsonl");
  // The disk filled up: the file could not grow.
  Trace disk(2002, -1, "node0", 80 * kGiB, "exited", Stats{{{"dropped_events", 500}, {"grow_failures", 3}}});
  training(disk, 100);
  disk.write("trace-integrity/fire/disk_full.jsonl");
  // Everything recorded.
  Trace quiet(2003, -1, "node0", 80 * kGiB, "exited", Stats{{{"dropped_events", 0}}});
  training(quiet, 100);
  quiet.write("trace-integrity/quiet/complete.jsonl");
}

}  // namespace

// Issue 33: a transformer's attention through cuDNN (heuristic selections, a 60 ms plan build per
// direction), forward and backward each step. fire/: a new sequence length every step (variable-
// length text, no bucketing); quiet/: the same job with four length buckets, each built once in
// the first steps and reused for the rest of the run; and a fixed length.
void attention_rebuild() {
  const std::vector<Candidate> cands = {{8, "kernel_cfg=22", 0, 2.0, 0}, {11, "kernel_cfg=5", 0, 2.5, 0}};
  // PyTorch builds the heuristics' first plan only (BuildPlanPolicy_t::HEURISTICS_CHOICE).
  const std::vector<Candidate> first = {cands[0]};
  auto job = [&](uint32_t pid, const std::vector<int64_t>& lengths, const std::string& rel, uint64_t setup_ns = 0) {
    Trace t(pid);
    cuda13_h200(t);
    t.plan_build_ns = 60'000'000;
    if (setup_ns) {  // the job's work before training (weights to the device, data loading)
      t.malloc(512 * kMiB);
      t.wait(setup_ns);
    }
    std::map<int64_t, std::pair<Plan, Plan>> built;
    for (int64_t len : lengths) {
      Problem fwd = attention(8, 16, len, false), bwd = attention(8, 16, len, true);
      auto it = built.find(len);
      if (it == built.end()) {
        Plan f = *t.search(fwd, first, 0, false);
        t.wait(20'000'000);  // the rest of the forward pass
        Plan b = *t.search(bwd, first, 0, false);
        it = built.emplace(len, std::make_pair(f, b)).first;
      } else {
        t.run(it->second.first, fwd);
        t.wait(20'000'000);
        t.run(it->second.second, bwd);
      }
      t.stream_sync(5'000'000);
      t.wait(10'000'000);
    }
    t.write(rel);
  };
  std::vector<int64_t> dynamic, buckets, fixed(40, 1024);
  for (int step = 0; step < 40; ++step) {
    dynamic.push_back(128 + 8 * ((step * 37) % 240));  // 40 distinct lengths in 128..2040
    buckets.push_back(512 * (1 + step % 4));
  }
  job(1701, dynamic, "attention-rebuild/fire/dynamic_lengths.jsonl");
  job(1702, buckets, "attention-rebuild/quiet/length_buckets.jsonl");
  job(1703, fixed, "attention-rebuild/quiet/fixed_length.jsonl");
  // The buckets after 6 s of setup: half of the job's time ends before training starts, and its 8
  // plan builds fall in the second half of its time but in the first 4 of its 40 steps (as on the
  // H100, where the builds were 0.85 s of 1.2 s of training: docs/dev/validation.md).
  job(1704, buckets, "attention-rebuild/quiet/buckets_after_setup.jsonl", 6'000'000'000);
  // Ranks whose attention plans differ (algo-divergence): on rank 1 the heuristics' first plan
  // failed at its first run (a workspace it could not get), so it runs the second engine; quiet/:
  // both ranks the heuristics' first.
  for (bool diverge : {true, false}) {
    for (int rank = 0; rank < 2; ++rank) {
      Trace t(uint32_t(1710 + rank + (diverge ? 0 : 10)), rank, "node" + std::to_string(rank));
      cuda13_h200(t);
      t.plan_build_ns = 60'000'000;
      Problem fwd = attention(8, 16, 1024, false), bwd = attention(8, 16, 1024, true);
      std::vector<int64_t> fail;
      if (diverge && rank == 1) fail.push_back(8);
      Plan f = *t.search(fwd, cands, 0, false, 0, fail);
      Plan b = *t.search(bwd, cands, 0, false);
      for (int step = 0; step < 30; ++step) {
        t.run(f, fwd);
        t.wait(20'000'000);
        t.run(b, bwd);
        t.stream_sync(5'000'000);
        t.wait(10'000'000);
      }
      t.write(std::string("algo-divergence/") + (diverge ? "fire" : "quiet") + "/attention/rank" +
              std::to_string(rank) + ".jsonl");
    }
  }
}

// Issue 33: plan switches within one process. fire/: a benchmark job that searched a problem again
// (its plan cache lost the plan) and timed another winner, then ran that. quiet/: cudnn-frontend's
// autotune (every candidate of one search run by the program, then the fastest), and a program
// asking cuDNN's heuristics a new question per graph (each search's first answer differs), as
// cudnn-frontend's samples do (seen on an H100: docs/dev/validation.md).
void algo_divergence_within() {
  const std::vector<Candidate> cands = {{12, "tile=2", kMiB, 0.40, 0}, {12, "tile=3", kMiB, 0.41, 0},
                                        {7, "kernel_cfg=5", 0, 0.55, 0}};
  Problem problem = conv(32, 56, 64);
  {
    Trace t(1801);
    Plan a = *t.search(problem, cands, 0);
    steps(t, a, problem, 10);
    Plan b = *t.search(problem, cands, 1);  // searched again: the other near-equal plan won
    steps(t, b, problem, 10);
    t.write("algo-divergence/fire/within-process/research.jsonl");
  }
  {
    Trace t(1802);
    Plan first = *t.search(problem, cands, 0, false);
    std::vector<Plan> built = t.last_plans;
    t.run(first, problem);
    for (const Plan& p : built) {
      for (int i = 0; i < 3; ++i) t.run(p, problem);
    }
    steps(t, built.at(1), problem, 10);
    t.write("algo-divergence/quiet/within-process/autotune.jsonl");
  }
  Trace t(1803);
  for (const Candidate& c : cands) {
    Plan p = *t.search(problem, {c}, 0, false);
    for (int i = 0; i < 3; ++i) t.run(p, problem);
  }
  t.write("algo-divergence/quiet/within-process/heuristic_questions.jsonl");
}

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: make_fixtures OUT_DIR   (writes OUT_DIR/<rule>/<fire|quiet>/<name>.jsonl)\n");
    return 2;
  }
  g_out = argv[1];
  Trace healthy = research_storm();
  storm::fixtures();
  research_repeat(healthy);
  workspace_blowup();
  algo_divergence();
  algo_divergence_causes();
  env_drift();
  oom_postmortem();
  unsupported_config();
  allocation_churn();
  sync_stall();
  plan_pinning();
  expandable_oom();
  oom_causes();
  memory_coverage();
  trace_integrity();
  attention_rebuild();
  algo_divergence_within();
  return 0;
}
