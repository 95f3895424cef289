// What one pass over a process's calls establishes, for every rule to use: searches, memory
// (replayed allocations, peaks, out-of-memory failures with what was live), synchronization
// time, allocation churn after warm-up, cuDNN failures, and which plan or algorithm each
// problem ran with over time.
//
// The pass is the only per-event work the analyzer does (rules work on these facts), so its
// cost per event is what the analyzer's speed is. Memory is bounded by what is live at once
// (allocations, open searches) and by the number of distinct problems, not by the trace length.
#pragma once

#include "bytes_text.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/reader.h"
#include "trace/searches.h"

namespace cuprobe::analysis {

// What an allocation was for, as far as the trace says (Allocation::purpose is its text).
enum class AllocationKind {
  kSearchWorkspace,  // allocated while cuDNN chose a plan: the search's workspace
  kPhysical,         // physical memory (cuMemCreate) mapped into a reserved range
  kCachingSegment,   // a segment of PyTorch's caching allocator
  kOtherOwner,       // allocated by a known owner other than PyTorch's allocators (NCCL, cuBLAS, ...)
  kPlain,            // nothing more is known
};

struct Allocation {
  uint64_t ptr = 0;
  uint64_t size = 0;
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  std::string api;
  AllocationKind kind = AllocationKind::kPlain;
  std::string purpose;  // kind in words: "workspace while cuDNN chose a plan for <problem>", ...
  std::string owner;    // who asked for it (owner_of): "PyTorch caching allocator", "NCCL", ...
  reader::StackId stack;  // where it was allocated, when the trace has the stack
};

// An allocation or free that allocation-churn counts (not a search's, not a pool's, not a retry's).
struct ChurnCall {
  uint64_t ts_ns = 0;
  uint64_t dur_ns = 0;
  uint64_t size = 0;
  bool alloc = false;
  bool physical = false;  // a physical handle (cuMemCreate/cuMemRelease): expandable segments
  bool again = false;     // an allocation of a size this process freed before: the same memory taken back
};

// One device's memory as the process used it, over every path: the runtime's allocations
// (cudaMalloc, cudaMallocAsync and pools, managed memory), the driver's (cuMemAlloc*, and the
// virtual memory API: reservations, physical handles from cuMemCreate, mappings).
struct DeviceMemory {
  int device = -1;
  uint64_t allocated = 0;  // bytes allocated in total (successful calls)
  uint64_t allocations = 0;
  uint64_t live = 0;       // device memory held now: addresses plus physical handles
  uint64_t peak = 0;
  uint64_t physical_live = 0;  // of live, physical memory from cuMemCreate
  uint64_t physical_peak = 0;
  uint64_t pooled_live = 0;    // of live, from stream-ordered pools (cudaMallocAsync, ...)
  uint64_t pooled_peak = 0;    // what the pools may still hold: freed memory stays until trimmed
  uint64_t reserved = 0;       // virtual address space reserved (cuMemAddressReserve), no memory by itself
  uint64_t reserved_peak = 0;
  uint64_t mapped = 0;         // bytes of reservations mapped to physical memory
  uint64_t total_mem = 0;  // from the device record, 0 when unknown
  std::map<std::string, uint64_t> live_by_owner;  // at the peak
};

// What the device said was in use (memory samples) against what cuprobe saw live on it.
struct MemoryCoverage {
  int device = -1;
  uint64_t samples = 0;
  // "seen" is the live allocations, with the pools' peak standing for their allocations: freed
  // pool memory stays in use on the device until the pool trims it, which no call says.
  uint64_t baseline_gap = 0;  // used minus seen at the first sample (the context, other processes)
  uint64_t max_unaccounted = 0;  // the largest growth of that gap since, and when
  uint64_t max_ts_ns = 0;
  uint64_t used_then = 0;
  uint64_t seen_then = 0;
  uint64_t total = 0;
  uint64_t last_unaccounted = 0;
  bool pools_sampled = false;  // pools' reserved memory came from the shim's samples, not their peak
};

struct OomEvent {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  int device = -1;
  std::string api;
  uint64_t requested = 0;
  int32_t ret = 0;
  uint64_t live = 0;
  uint64_t peak = 0;
  std::vector<Allocation> largest;     // the largest live allocations then
  uint64_t freed_before = 0;           // bytes freed in the second before (cache flushes)
  int frees_before = 0;
  bool retried_ok = false;             // the thread's next allocation, of the same size, succeeded
  bool is_retry = false;               // the retry of the thread's previous failed request
  bool continued = false;              // the process allocated or ran cuDNN work successfully later
  uint64_t calls_after = 0;            // calls the process made afterwards
  uint64_t event_index = 0;
  std::string search_problem;          // the search in progress, when there was one
  std::string injected_by;             // the fault rule that replaced the call ("mem-cap": the memory cap)
  bool mem_cap = false;                // that rule was the memory cap (cuprobe record --mem-cap)
  reader::StackId stack;               // where the failed call was made
  // The framework's own report of the failure (PyTorch's caching allocator, once it gave up):
  // the request as its error message states it, 0 when there was none.
  uint64_t framework_request = 0;
  bool raised = false;                 // the framework raised its out-of-memory error for it
  // What the framework's allocator held then (its report; 0 when none): bytes in tensors, and
  // bytes reserved from the device. Reserved but not in tensors is cached memory that could not
  // serve the request (fragmentation, when it is larger than the request).
  uint64_t framework_allocated = 0;
  uint64_t framework_reserved = 0;
  uint64_t failed_call_size = 0;       // what the failed call itself asked for (a page of a mapping)
  // A stream-ordered pool's request: what the device's pools held reserved when the shim sampled
  // them right after the failure (0: no sample), and what was live in them.
  uint64_t pool_reserved = 0;
  uint64_t pool_live = 0;
  uint64_t partial = 0;                // of `live`, pages of the same request the thread had just obtained
  std::string owner;                   // who made the failed call (owner_of)
  std::map<std::string, uint64_t> live_by_owner;
};

// A call the fault plan replaced, and what the application did next on that thread.
struct InjectedFault {
  int rule = -1;
  std::string api;
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  uint64_t k = 0;
  int32_t ret = 0;
  std::string problem;
  // "retried the same call", "freed memory and retried", "retried with a smaller size",
  // "moved to another plan", "moved to another algorithm", "went on to other work",
  // "stopped" (no call of its kind followed on that thread), "went on after the held call" (a
  // DELAY rule's call, which waited and then ran as usual)
  std::string outcome;
  bool next_ok = false;  // the call that resolved the outcome succeeded
};

// One rule of the process's fault plan (or its memory cap) with what it did.
struct FaultRuleFacts {
  int index = -1;
  std::string name;
  std::string text;
  bool mem_cap = false;
  uint64_t matched = 0;   // calls that passed the rule's filters (from the trace header)
  uint64_t injected = 0;  // calls it replaced
  std::map<std::string, uint64_t> outcomes;
};

// A cuDNN call that failed, aggregated by (api, problem, status, whether it was routine).
struct CudnnFailure {
  std::string api;
  std::string problem;
  const reader::Problem* problem_info = nullptr;  // typed; valid while the trace is, nullptr unknown
  uint64_t problem_hash = 0;
  int32_t status = 0;
  bool routine = false;  // a plan or candidate rejected while a search went on to a winner
  uint64_t count = 0;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint32_t align = 0;    // smallest pointer alignment seen with it, 0 unknown
  reader::StackId stack;  // where it first happened, when recorded
};

// Which plans (engine + knobs, or legacy algorithm) a problem ran with outside searches.
struct PlanUse {
  std::string plan;  // "engine 12 [tile_size=2,...]" or "algo 1"
  int64_t engine = -1;
  std::string knobs;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint64_t executions = 0;
  uint32_t notes = 0;
  uint32_t tid = 0;             // the thread it first ran on
  bool several_threads = false;  // it ran on more than one thread
};

struct ProblemUse {
  std::string problem;
  uint64_t hash = 0;
  std::vector<PlanUse> plans;  // in order of first use
};

// How a process was configured, as far as its trace tells (issue 13): how it chose its plans,
// which numerical notes its candidates carried (what PyTorch's filters let through: deterministic
// mode drops NONDETERMINISTIC engines, TF32 off drops TENSOR_CORE engines for float32 problems),
// its library versions, GPU models and the CUDA libraries it had mapped. Settings are inferred
// across the job's processes (trackers/config.h infer_settings): one process alone cannot tell
// "deterministic on" from "this problem has no non-deterministic engine".
struct ProblemConfig {
  // How the problem's plans were chosen (kChoseBy* bits), over all its selections.
  uint8_t chose_by = 0;
  bool fp32 = false;            // float32 data (CUDNN_DATA_FLOAT), where TF32 applies
  bool benchmark_searched = false;  // a benchmark search built its candidates (the full filtered list)
  uint32_t candidate_notes = 0; // numerical-note bits of any candidate that finalized
  uint32_t chosen_notes = 0;    // of the plans that won
  uint32_t candidates = 0;      // candidates that finalized, over all selections
};
inline constexpr uint8_t kChoseByBenchmark = 1;  // backend search with timed candidates (benchmark on)
inline constexpr uint8_t kChoseByHeuristics = 2; // backend: the first plan that finalized and ran (benchmark off)
inline constexpr uint8_t kChoseByLegacyFind = 4; // cudnnFind*AlgorithmEx (legacy API, benchmark on)
inline constexpr uint8_t kChoseByLegacyGet = 8;  // cudnnGet*_v7 (legacy API, benchmark off)
// cudnnBackendNumericalNote_t bits as the shim records them (1 << note).
inline constexpr uint32_t kNoteTensorCore = 1u << 0;
inline constexpr uint32_t kNoteDownConvert = 1u << 1;
inline constexpr uint32_t kNoteNondeterministic = 1u << 4;

struct ProcessConfig {
  uint64_t benchmark_searches = 0;
  uint64_t heuristic_selections = 0;
  uint64_t legacy_find = 0;
  uint64_t legacy_get = 0;
  std::map<uint64_t, ProblemConfig> problems;  // by problem hash
  // Trace properties, -1 when the trace has none: CUDA's encoding (13000 = 13.0), cuDNN's (91900 = 9.19.0).
  int64_t cuda_runtime = -1;
  int64_t cuda_driver = -1;   // the newest CUDA the driver supports
  int64_t cudnn = -1;
  int64_t cudnn_cudart = -1;  // the CUDA runtime cuDNN was built against
  std::vector<std::string> gpus;  // "NVIDIA H200 (cc 9.0)" of each device the process used, distinct
  std::string gpu;                // of the device most calls ran on, "" unknown
  // Mapped copies of the CUDA libraries, by library ("libcudnn", "libcudnn_graph", "libcudart"):
  // their distinct paths. Only known when the trace lists modules, which the shim writes with
  // stacks (shim/stacks.cpp): modules_known says whether it did.
  std::map<std::string, std::vector<std::string>> library_copies;
  bool modules_known = false;
  uint64_t duplicate_libraries = 0;  // the shim's kStatDuplicateLibraries (most copies of one library it saw)
};

struct ProcessFacts {
  const reader::Trace* trace = nullptr;
  uint32_t pid = 0;
  std::string host;
  int rank = -1;  // -1 unknown
  // Where rank came from: "env" (RANK, SLURM_PROCID, ... as the shim read them at start), "nccl"
  // (the largest NCCL communicator the process set up: trace::Property::kNcclRank), "" unknown.
  std::string rank_source;
  // The process's span: its first recorded call (often a device query while the framework is
  // imported, seconds before any work) to the end of its last call.
  uint64_t first_ns = 0;  // first call
  uint64_t last_ns = 0;   // end of the last call
  // The job's time, which rules measure against (span_s in analysis/common.h): from the first
  // call that does work (an allocation, a copy, a kernel launch, a synchronization, a cuDNN
  // handle, plan or execution), not the interpreter's start-up, to last_ns. first_ns when the
  // process did no work.
  uint64_t job_start_ns = 0;
  // Whether it made any such call: false for a launcher (torchrun's agent, a script that only
  // starts workers) or a helper process whose calls were an import's device queries.
  bool did_work = false;
  // Where each training step (or iteration) began, in time order, the first one included: the
  // layer of the first cuDNN problem the process ran (reader::layer_key) running again after
  // another layer ran (at its search's start when that run ended a search). Kept up to
  // kMaxSteps (trackers/warmup.h StepDetector) entries; `steps` counts them all. Empty when the
  // process ran no cuDNN problem.
  std::vector<uint64_t> step_starts;
  uint64_t steps = 0;
  uint64_t warmup_end_ns = 0;  // second_pass_ns when seen, else the first part of the job
  double warmup_fraction = 0.2;  // the FactOptions it was gathered with: the part of the job warmup_end_ns stands for
  // Where the second step began (step_starts[1]), 0 when not seen.
  uint64_t second_pass_ns = 0;
  uint64_t events = 0;
  std::map<std::string, uint64_t> calls_by_api;
  std::map<std::string, uint64_t> time_by_api;  // ns spent inside calls
  std::vector<reader::SearchRecord> searches;
  std::map<int, DeviceMemory> memory;
  std::map<int, MemoryCoverage> coverage;
  std::vector<OomEvent> ooms;
  std::map<std::string, uint64_t> sync_ns;  // per sync API, outside searches
  uint64_t sync_calls = 0;                  // synchronizations outside searches
  // Where they came from: the stacks (0: none recorded) of one in every sync_stack_stride of
  // them, evenly over the run (SyncTracker::kMaxStacks at most).
  std::vector<reader::StackId> sync_stacks;
  uint64_t sync_stack_stride = 1;
  uint64_t steady_allocs = 0;  // device allocations and frees after warm-up
  uint64_t steady_alloc_ns = 0;
  uint64_t steady_frees = 0;
  uint64_t steady_alloc_bytes = 0;
  std::vector<reader::StackId> steady_alloc_stacks;  // where the steady-state allocations came from
  // When every allocation and free that churn counts happened, in time order (the first 2^20):
  // whether churn lasted through the job or died down.
  std::vector<uint64_t> churn_call_ts;
  // The same calls with what tells churn from growth (issue 28), in the same order.
  std::vector<ChurnCall> churn_calls;
  // Frees the caching allocator made to retry a failed request (after a failed allocation on the
  // same thread, before its next one): the out-of-memory story, never churn.
  uint64_t retry_frees = 0;
  // Which of PyTorch's allocators the trace shows at work (allocations by path, all of the run)
  // and what the job configured (PYTORCH_CUDA_ALLOC_CONF, or PYTORCH_ALLOC_CONF; "" unset or not
  // recorded).
  uint64_t plain_allocs = 0, physical_allocs = 0, pooled_allocs = 0;
  std::string alloc_conf;
  std::vector<CudnnFailure> cudnn_failures;
  std::map<uint64_t, ProblemUse> problems;  // by problem hash
  std::vector<std::string> last_calls;       // the process's final calls, for unfinished traces
  std::vector<InjectedFault> injected;       // calls the fault plan replaced, in time order
  // When the process first aborted an NCCL communicator (ncclCommAbort: PyTorch's watchdog does so
  // after a collective timed out or failed, before it tears the process down); 0: never.
  uint64_t nccl_abort_ns = 0;
  std::vector<FaultRuleFacts> fault_rules;   // the plan in force, empty when none
  std::map<int, uint64_t> mem_cap;           // device -> the memory cap's bytes there
  int device = -1;                           // the device most calls ran on
  ProcessConfig config;                      // how it chose plans, versions, libraries (trackers/config.h)
};

struct FactOptions {
  double warmup_fraction = 0.2;  // of the job's span (from job_start_ns)
};

ProcessFacts gather_facts(const reader::Trace& trace, const FactOptions& options);


using cuprobe::human_bytes;  // bytes_text.h
// Bytes as PyTorch's format_size prints them ("8.00 GiB", "20.00 MiB"), for sizes its messages state.
std::string torch_bytes(uint64_t n);
// The size PyTorch's caching allocator asks the device for, and names in its out-of-memory
// message, for a request of `rounded` bytes (already rounded to its 512-byte blocks):
// CUDACachingAllocator.cpp get_allocation_size (2 MiB up to 1 MiB, 20 MiB up to 10 MiB, else
// rounded up to 2 MiB).
uint64_t torch_allocation_size(uint64_t rounded);

// "PyTorch caching allocator 120.16 GiB, cuBLAS 64.1 MiB": owners by bytes, the largest first,
// owners of no bytes left out; "" when none.
std::string owners_text(const std::map<std::string, uint64_t>& bytes_by_owner);

// Who asked for an allocation, from the module its call came from (the caller field, or the
// first frame of its stack outside the CUDA libraries and cuprobe).
std::string owner_of(const reader::Trace& trace, const reader::Api& api, uint64_t caller, reader::StackId stack);


}  // namespace cuprobe::analysis
