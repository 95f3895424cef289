// What the exports (Perfetto, Chrome JSON, SQLite) and the HTML report show of a job, as one
// stream of typed items per process: a single pass over each trace's calls, in time order, that
// never holds more than what is live at once (open searches, live allocations).
//
// walk_job opens each trace in turn (one at a time: memory stays at one trace's), and hands a
// TimelineSink, for each process in the order given:
//   begin_process, then per call (in timestamp order) at most one of search / execution / sync /
//   failure / fault, plus allocation and memory items for memory calls, and `call` for every
//   call when the sink asks for calls (SQLite); then end_process.
// Times are the traced machine's CLOCK_MONOTONIC nanoseconds of that process; ProcessInfo::wall_ns
// converts them to wall-clock (Unix epoch) nanoseconds, which align processes, hosts and a PyTorch
// profiler (Kineto) trace of the same run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trace/reader.h"
#include "trace/searches.h"

namespace cuprobe::exporter {

struct ProcessInfo {
  const reader::Trace* trace = nullptr;  // valid until end_process returns
  uint32_t pid = 0;
  int rank = -1;             // the RANK variable's, or the NCCL communicator's, -1 unknown
  std::string host;
  std::string label;         // "rank 0 (pid 123) on host h" / "pid 123 on host h (cuda:0)"
  std::string command;       // the command line, shortened
  uint64_t first_ns = 0;     // first and last call (monotonic)
  uint64_t last_ns = 0;
  uint64_t events = 0;       // calls recorded
  std::vector<uint32_t> tids;  // threads with calls, in order of first call
  uint64_t wall_ns(uint64_t mono_ns) const { return trace ? trace->wall_ns(mono_ns) : mono_ns; }
};

// A call of a cuDNN plan (backend) or algorithm (legacy). `candidate`: timed or tried by a plan
// selection in progress on its thread (a benchmark search's runs), not the application's work.
struct ExecutionItem {
  uint32_t tid = 0;
  uint64_t ts_ns = 0, dur_ns = 0;
  int device = -1;
  int32_t ret = 0;
  bool backend = true;
  int64_t engine = -1;       // backend engine global index, legacy algorithm
  const std::string* knobs = nullptr;    // "tile=2,stages=3", never null
  uint64_t workspace = 0;    // bytes the call was given, 0 unknown
  const std::string* problem = nullptr;  // text, never null ("" unknown)
  uint64_t problem_hash = 0;
  bool candidate = false;
};

// A call that blocks the host until the device is done (kApiSync).
struct SyncItem {
  uint32_t tid = 0;
  uint64_t ts_ns = 0, dur_ns = 0;
  int device = -1;
  const std::string* api = nullptr;
  int32_t ret = 0;
};

// A call that returned an error (not a sync or execution, which carry their own ret).
struct FailureItem {
  uint32_t tid = 0;
  uint64_t ts_ns = 0, dur_ns = 0;
  int device = -1;
  const std::string* api = nullptr;
  const char* library = "";  // "cudart", "cuda", "cudnn", "nccl"
  int32_t ret = 0;
  reader::StackId stack;
  bool injected = false;     // also reported as a FaultItem
};

// A call cuprobe's fault mode replaced (a cuDNN status or an out-of-memory error it made).
struct FaultItem {
  uint32_t tid = 0;
  uint64_t ts_ns = 0;
  const std::string* api = nullptr;
  int32_t ret = 0;
  const std::string* rule = nullptr;  // the fault rule's name ("mem-cap" for the memory cap)
  uint64_t k = 0;                     // the call's match number for that rule
};

// Device memory obtained or given back: an allocation (size > 0) or its free (`freed`), with the
// owner that asked for it (analysis/owners.cpp: "PyTorch caching allocator", "PyTorch caching
// allocator (expandable segments)", "NCCL", "cuDNN", ...) and, for an allocation made while its
// thread was selecting a plan, that problem (a search workspace).
struct AllocationItem {
  uint32_t tid = 0;
  uint64_t ts_ns = 0, dur_ns = 0;
  int device = -1;
  const std::string* api = nullptr;
  uint64_t address = 0;      // or the physical handle (cuMemCreate)
  uint64_t size = 0;
  bool ok = true;            // false: the allocation failed (out of memory, or injected)
  int32_t ret = 0;
  bool freed = false;        // this is the free of an earlier allocation (size: what it freed)
  uint64_t alloc_ts_ns = 0;  // for a free: when the memory was allocated
  const std::string* owner = nullptr;   // never null
  const std::string* search_problem = nullptr;  // non-null: allocated during this problem's plan selection
  reader::StackId stack;
};

// Device memory live after a change, for one device: in total and of the owner that changed.
struct MemorySample {
  uint64_t ts_ns = 0;
  int device = -1;
  const std::string* owner = nullptr;
  uint64_t owner_bytes = 0;  // live bytes of that owner on that device after the change
  uint64_t total_bytes = 0;  // live bytes of every owner on that device after the change
};

class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  virtual bool wants_calls() const { return false; }  // `call` for every call (SQLite's calls table)
  virtual void begin_process(const ProcessInfo& p) = 0;
  virtual void call(const reader::Event&, const reader::Api&) {}
  virtual void search(const reader::SearchRecord&) {}
  virtual void execution(const ExecutionItem&) {}
  virtual void sync(const SyncItem&) {}
  virtual void failure(const FailureItem&) {}
  virtual void fault(const FaultItem&) {}
  virtual void allocation(const AllocationItem&) {}
  virtual void memory(const MemorySample&) {}
  virtual void end_process(const ProcessInfo&) {}
};

// Progress of a long walk: calls seen so far of the job's `total` (known up front from the trace
// headers); called at most a few times a second.
using Progress = std::function<void(uint64_t done, uint64_t total)>;

struct WalkOptions {
  Progress progress;            // may be empty
  std::vector<std::string>* warnings = nullptr;  // unreadable inputs, damaged traces
};

// Walks every trace under `paths` (run directories, trace files, `cuprobe dump` JSON Lines) in
// path order. Returns an error for a path that cannot be read at all.
Result<bool> walk_job(const std::vector<std::string>& paths, TimelineSink& sink, const WalkOptions& options = {});
// One trace already open (tests, JSON Lines held in memory).
void walk_trace(const reader::Trace& trace, TimelineSink& sink, const WalkOptions& options = {},
                uint64_t done_before = 0, uint64_t total = 0);

}  // namespace cuprobe::exporter
