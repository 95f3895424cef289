// Recognising algorithm selection in a trace: benchmark searches (cudnn.benchmark) and
// heuristic selections, for the backend (graph) API and the legacy API.
//
// The shim records the raw facts (operation graphs and plans finalized with their problem,
// engine, knobs and workspace; executions; CUDA events recorded, synchronized and timed;
// allocations; legacy Find*/Get* results). SearchTracker reads a process's calls in time order
// and, per thread, rebuilds what cudnn-frontend and PyTorch did:
//
//  backend  an episode starts when an operation graph (or a plan) is finalized for a problem;
//           its candidates are the plans built for that problem. If executions of candidates
//           are timed with CUDA events (warm-up, record, execute, record, synchronize, elapsed
//           time: cudnn-frontend's time_sorted_plan), it is a benchmark search, and the winner
//           is the first plan executed again after it was timed. Otherwise it is a heuristic
//           selection and the winner is the first candidate that executed successfully.
//  legacy   a cudnnFind* call is a benchmark search with the results cuDNN returned; a
//           cudnnGet*_v7 call a heuristic query. The winner is the algorithm of the next
//           execution of that problem on the same thread.
//
// Deriving searches offline keeps the shim simple and lets a trace cut short mid-search still
// yield a (partial, complete=false) record. Memory is bounded by the open episodes: one per
// thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "enum_names.h"
#include "trace/reader.h"

namespace cuprobe::reader {

struct SearchCandidate {
  uint64_t plan = 0;     // backend plan id (0 for legacy)
  int64_t engine = -1;   // backend engine global index, or legacy algorithm
  std::string knobs;     // backend knobs ("tile=2,stages=3"), legacy "math=N[,nondeterministic]"
  int32_t math = -1;         // legacy: the result's math type, -1 unknown
  bool deterministic = true; // legacy: the result's determinism (unknown counts as deterministic)
  uint64_t workspace = 0;
  int32_t build_status = 0;  // finalize status (legacy: the result's status)
  int32_t exec_status = -1;  // last execution status, -1 when never executed
  int executions = 0;
  uint64_t last_exec_ns = 0;
  double time_ms = -1;   // measured time (min over timed runs), -1 when not timed
  uint32_t notes = 0;    // numerical notes bits
  bool injected = false; // a failure of this candidate was made by cuprobe's fault mode
};

// Which cuDNN API chose the plan, and how: compared as enums; the names (what outputs, plan files
// and evidence carry) are in the tables below and nowhere else.
// kCublasLt: cuBLASLt's heuristics (cublasLtMatmulAlgoGetHeuristic) and the matmul that ran
// one of the algorithms offered; recorded once per thread, problem and algorithm run (PyTorch asks
// the heuristics at every matmul: the repeats of a selection already seen are not new ones).
enum class SearchApi : uint8_t { kBackend, kLegacy, kCublasLt };
enum class SearchMode : uint8_t { kBenchmark, kHeuristic };
inline constexpr std::pair<SearchMode, const char*> kSearchModeNames[] = {
    {SearchMode::kBenchmark, "benchmark"},
    {SearchMode::kHeuristic, "heuristic"},
};
inline constexpr std::pair<SearchApi, const char*> kSearchApiNames[] = {
    {SearchApi::kBackend, "backend"},
    {SearchApi::kLegacy, "legacy"},
    {SearchApi::kCublasLt, "cublaslt"},
};
inline const char* name_of(SearchMode m) { return name_in(kSearchModeNames, m); }
inline const char* name_of(SearchApi a) { return name_in(kSearchApiNames, a); }

struct SearchRecord {
  uint32_t pid = 0;
  uint32_t tid = 0;
  int device = -1;
  SearchApi api = SearchApi::kBackend;
  SearchMode mode = SearchMode::kHeuristic;
  std::string function;  // as outputs show it: "backend", or the legacy function that searched
  std::string problem;
  const Problem* problem_info = nullptr;  // typed, valid while the trace is; nullptr when unknown
  uint64_t problem_hash = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;  // when the winner started running (or the last event of the episode)
  StackId stack;        // the call stack of the call that began it (Trace::stack), 0 when none
  std::vector<SearchCandidate> candidates;
  int winner = -1;  // index into candidates, -1 when the trace ends before a winner ran
  uint64_t search_workspace = 0;  // largest allocation made during the search and used by it
  // Largest allocation made during the search and freed again before any cuDNN work on the
  // thread: an allocator measuring how much it could give (PyTorch's cudaMallocAsync backend
  // probes the pool so before each search), not a workspace.
  uint64_t probe_bytes = 0;
  int probes = 0;
  uint32_t align = 0;             // smallest alignment of the problem's data (bytes), 0 unknown
  int plans_rejected = 0;         // candidates whose build failed (routine NOT_SUPPORTED)
  // Where the selection's time went, of its calls on its thread (backend selections): building
  // candidate plans (their finalizes), launching candidate runs, and waiting for the device
  // (synchronizations: the timing runs' device time shows here), cuDNN's heuristics queries (the
  // results of an engine-heuristics descriptor: one per heuristics mode asked). The rest of
  // end - start is the framework's own work between the calls.
  uint64_t build_ns = 0, launch_ns = 0, wait_ns = 0, heur_ns = 0;
  // How the shim steered this selection: kPinned (plan pinning replayed a plan file's plan) or
  // kBudgeted (the search budget gave it cuDNN's heuristic choice); kCount when it did not.
  trace::PinOutcome steered = trace::PinOutcome::kCount;
  bool complete = false;

  bool backend() const { return api == SearchApi::kBackend; }
  bool cudnn() const { return api != SearchApi::kCublasLt; }
  bool benchmark() const { return mode == SearchMode::kBenchmark; }
  bool was_steered() const { return steered != trace::PinOutcome::kCount; }
};

class SearchTracker {
 public:
  using Sink = std::function<void(const SearchRecord&)>;
  SearchTracker(const Trace& trace, Sink sink);
  void on_event(const Event& e);
  void finish();  // closes every open episode (complete=false where no winner ran)
  // The problem the thread is selecting a plan for right now (between its operation graph and
  // the winner's first run), or nullptr.
  const std::string* selecting(uint32_t tid) const;
  // Whether the thread's open episode is for this problem (its executions are candidates).
  bool in_episode(uint32_t tid, uint64_t problem_hash) const;

 private:
  struct Episode {
    bool open = false;
    SearchRecord rec;
    std::map<uint64_t, size_t> by_plan;  // plan id -> candidate index
    int last_executed = -1;              // candidate index of the latest execution
    int first_ok = -1;                   // candidate index of the first successful execution
    bool timed = false;
    // Times measured over several runs of one candidate (cudnn-frontend's autotune), per run: a
    // search only once a second candidate has one (an application timing a span of its chosen
    // plan's runs after a heuristic selection is not searching).
    std::vector<std::pair<size_t, double>> multi_run_times;
    // The latest allocation of the episode, until the thread either frees it (a probe) or does
    // anything else the tracker sees (then it is search workspace).
    uint64_t pending_ptr = 0, pending_size = 0;
  };
  struct LegacyPending {
    SearchRecord rec;
  };
  struct ThreadState {
    Episode episode;
    std::map<uint64_t, LegacyPending> legacy;  // problem hash -> search awaiting its winner
    // cuBLASLt selections emitted: problem hash -> the algorithm and configuration that ran.
    std::unordered_map<uint64_t, std::pair<int64_t, std::string>> blas_chosen;
    // Plan executions this thread made, and for each event it recorded that count when it did:
    // a benchmark search times one plan between two records of its own thread (PyTorch one run,
    // cudnn-frontend's autotune several runs of each candidate: the time per run is the
    // candidate's, once two candidates have one), so a measured time spanning no execution or
    // several plans' (a framework timing a whole step around a heuristic selection, DDP's runtime
    // statistics) is not a candidate's.
    uint64_t executions = 0;
    uint64_t same_plan_since = 0;  // the first execution (1-based) of the latest run of one plan
    uint64_t last_plan = 0;
    bool records_seen = false;
    std::unordered_map<uint64_t, uint64_t> recorded_at;  // event -> executions when recorded
  };

  struct Fields;
  void close(Episode& ep);
  static void settle_pending(Episode& ep);  // the pending allocation counts as search workspace
  // on_event by the event's role:
  void on_finalize(const Event& e, const Fields& f, Episode& ep);
  void on_execute(const Event& e, const Fields& f, ThreadState& ts);
  void on_event_record(const Event& e, const Fields& f, ThreadState& ts);
  void on_elapsed(const Event& e, const Fields& f, ThreadState& ts);
  void on_legacy_query(const Event& e, const Fields& f, SearchApi api, bool find, ThreadState& ts);
  void on_legacy_execute(const Event& e, const Fields& f, ThreadState& ts);
  uint64_t u(const Event& e, int field) const { return field >= 0 && field < e.nargs ? e.args[field] : 0; }
  int64_t i(const Event& e, int field) const { return int64_t(u(e, field)); }

  const Trace& trace_;
  Sink sink_;
  // The trace's pinned and budgeted selections by thread and problem: their times.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<const PinEvent*>> steered_;
  void emit(SearchRecord& r);
  std::map<uint32_t, ThreadState> threads_;
  int open_episodes_ = 0;  // lets selecting() and in_episode() answer at once when none is open
  // Field indices per API id, resolved once.
  struct Fields {
    int desc, kind, problem, engine, knobs, workspace, notes, plan, ms, size, results, algo, math, returned, ws, align;
    int event, start, end, ptr;
  };
  std::vector<Fields> fields_;
  std::vector<uint8_t> role_;  // what each API id is to the tracker
};

// The candidates of a legacy search, from the algorithm results its call returned.
// With the trace, a result that names its configuration (a cuBLASLt algorithm's) has it as knobs.
std::vector<SearchCandidate> legacy_candidates(const std::vector<trace::AlgoResult>* results,
                                               const Trace* trace = nullptr);

}  // namespace cuprobe::reader
