// Reading one cuprobe trace file (schema/cuprobe/trace_format.h) without trusting it.
//
// TraceFile::open maps the file read-only, checks the header, walks every chunk once to
// collect the process-wide records (API table, process info, devices, strings, properties,
// crash records) and to validate record sizes. What cannot be read is reported as a
// diagnostic naming the chunk, thread and offset where reading stopped; reading goes on with
// the next chunk. Events are then visited in timestamp order across the file's threads with
// for_each_event, in memory bounded by the number of threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuprobe/problem.h"
#include "cuprobe/trace_format.h"
#include "enum_names.h"
#include "trace/result.h"

namespace cuprobe::reader {

// Typed ids (the idea of heaptrack's util/indices.h): the ids of each of the trace's tables are
// a type of their own, so a stack id cannot be passed where a problem id is wanted. An id gives
// its number implicitly (output, tests against 0) and is made from a number only explicitly: where
// a call's field holds one (ProblemId(u(e, f.problem))) or a record names one.
template <class Tag>
struct Id {
  uint64_t value = 0;
  constexpr Id() = default;
  constexpr explicit Id(uint64_t v) : value(v) {}
  constexpr operator uint64_t() const { return value; }  // NOLINT(google-explicit-constructor)
};
using ProblemId = Id<struct ProblemTag>;          // Trace::problem: ProblemRecord, fields of type q
using StackId = Id<struct StackTag>;              // Trace::stack: StackRecord
using StringId = Id<struct StringTag>;            // Trace::string: StringRecord
using KnobsId = Id<struct KnobsTag>;              // Trace::knobs, knobs_text: fields of type k
using AlgoResultsId = Id<struct AlgoResultsTag>;  // Trace::algo_results: fields of type r

// How a process's trace ended, by name. One table, two spellings: `name` is what `cuprobe dump`
// writes (and the JSON Lines reader reads back) and `analyze` builds its wording on; `sqlite` is
// what `export --format sqlite` stores in processes.trace_state (docs/sql.md), words of its own
// that exported databases and the queries written against them already use.
struct FileStateName {
  trace::FileState value;
  const char* name;
  const char* sqlite;
};
inline constexpr FileStateName kFileStateNames[] = {
    {trace::FileState::kExited, "exited", "exited"},
    {trace::FileState::kSignaled, "signaled", "signaled"},
    {trace::FileState::kRecording, "incomplete", "recording"},
    {trace::FileState::kExeced, "exec", "execed"},
    {trace::FileState::kSnapshot, "snapshot", "snapshot"},
};
inline const char* name_of(trace::FileState s) { return name_in(kFileStateNames, s, &FileStateName::name); }
inline const char* sqlite_name_of(trace::FileState s) { return name_in(kFileStateNames, s, &FileStateName::sqlite); }
// A plan-pinning outcome's name (trace_format.h's kPinOutcomeNames, what dumps and evidence carry).
inline const char* name_of(trace::PinOutcome o) {
  return uint32_t(o) < uint32_t(trace::PinOutcome::kCount) ? trace::kPinOutcomeNames[uint32_t(o)] : "?";
}

struct Field {
  std::string name;
  char type = 'u';  // trace_format.h: p u i x f s
};

struct Api {
  std::string name;
  trace::Library library = trace::Library::kCudart;
  uint64_t flags = 0;  // trace::ApiFlags
  std::vector<Field> fields;
  int count_slot = -1;
  int field_index(const std::string& field) const;
};

struct Process {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  uint32_t uid = 0;
  std::string hostname;
  std::vector<std::string> cmdline;
  std::string exe;
  std::string cwd;
  // The configuration variables it had (trace::kRecordedEnv): PYTORCH_CUDA_ALLOC_CONF, NCCL_*, ...
  std::map<std::string, std::string> environment;
  // Library versions no other record holds (trace::Property::kLibraryVersion): "torch", "nccl",
  // "nvidia_driver" -> "2.11.0+cu130", ...
  std::map<std::string, std::string> library_versions;
};

struct Device {
  int index = -1;
  std::string name;
  uint64_t total_mem = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-..." as nvidia-smi prints it
  std::string pci_bus_id;  // "0000:18:00.0"
  int cc_major = 0;
  int cc_minor = 0;
  int multiprocessors = 0;
};

struct Crash {
  int signal = 0;
  uint32_t tid = 0;
  uint64_t ts_ns = 0;
  std::string api_in_flight;  // "" when none
  uint64_t in_flight_start_ns = 0;
};

// What plan pinning did for one plan selection (trace_format.h PinRecord).
struct PinEvent {
  uint32_t tid = 0;
  uint64_t ts_ns = 0;
  trace::PinOutcome outcome = trace::PinOutcome::kPinned;
  ProblemId problem;    // Trace::problem
  uint64_t problem_hash = 0;
  int64_t engine = -1;   // the pinned engine or algorithm, -1 when none applies
  KnobsId knobs;        // the pinned knob set when the selection ended on it
  bool legacy = false;
  bool answered = false;  // the shim answered the selection's heuristics query with the pinned configuration
  double pinned_ms = -1;  // the pinned plan's time in the plan file
  double search_ms = -1;  // what its search took in the run the plan file came from
  // kSearchedLater (search budget): the budgeted plan's time per run (pinned_ms: the plan now
  // running; search_ms: what the deferred search took), and whether the plan changed.
  double replaced_ms = -1;
  bool moved = false;
  bool no_fallback = false;  // kBudgeted: cuDNN's fallback list was answered empty (a ranked plan built)
};

// A cuDNN handle the process created, and the device it was created on.
struct CudnnHandle {
  uint64_t handle = 0;
  int device = -1;
  uint32_t tid = 0;
};

// Calls of a counted API (kernel launches, queries) per thread and device, and successful
// calls of a quiet API (cuDNN descriptor calls) per thread (device -1).
struct Count {
  uint32_t tid = 0;
  uint16_t api = 0;
  int device = -1;  // -1: unknown or beyond the separately counted devices
  uint64_t calls = 0;
};

// One decoded call. `args` points into the mapped file and is valid while the TraceFile lives.
struct Event {
  uint16_t api = 0;
  int32_t ret = 0;
  int16_t device = -1;
  bool has_stream = false;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t ts_ns = 0;   // CLOCK_MONOTONIC of the traced machine
  uint64_t dur_ns = 0;
  uint64_t stream = 0;
  const uint64_t* args = nullptr;
  int nargs = 0;
  StackId stack;        // the call's stack (Trace::stack), 0 when none was taken
  int fault_rule = -1;  // the fault rule that replaced this call (trace_format.h kCallInjected), else -1;
                        // kPinnedRule when plan pinning answered it (a candidate failed fast)
  uint64_t fault_k = 0; // the call's match number for that rule
  bool sample = false;  // the shim made this call itself (trace_format.h kCallSample)
  static constexpr int kPinnedRule = -2;
  bool injected() const { return fault_rule >= 0; }
  bool pinned() const { return fault_rule == kPinnedRule; }
};

// A call stack: native return addresses (innermost first) and the innermost Python frames.
struct PyFrame {
  std::string file;
  std::string function;
  int line = 0;
};
struct Stack {
  uint32_t id = 0;
  std::vector<uint64_t> pcs;
  std::vector<std::string> resolved;  // JSON Lines input: each native frame as dump printed it
  std::vector<PyFrame> python;
};

// A module that was mapped into the process, for symbolizing its addresses offline.
struct Module {
  uint64_t bias = 0;   // address = bias + the module's virtual address
  uint64_t start = 0;
  uint64_t end = 0;
  std::string path;
  std::string build_id;  // hex, "" when the module had none
};

// A rule of the fault plan the process ran under, with what it did.
struct FaultRule {
  int index = -1;  // trace::kFaultRuleSlots - 1: the memory cap
  int scope = 0;   // 0 per process, 1 per thread
  std::string name;
  std::string text;
  uint64_t matched = 0;
  uint64_t injected = 0;
  bool is_mem_cap() const { return index == trace::kFaultRuleSlots - 1; }
};

// A cuDNN problem of the trace (ProblemRecord), referred to by id from fields of type 'q'.
// JSON Lines written before trace format 2 name problems by their text only: such a problem has
// its text and hash, and typed == false (no dimensions, no layer identity beyond its hash).
struct Problem {
  uint32_t id = 0;
  uint64_t hash = 0;
  std::string text;  // common/problem_text.h
  bool typed = false;
  trace::ProblemDesc desc{};
};

// What a trace holds of a long run (trace_format.h RingInfo), in the process's CLOCK_MONOTONIC ns:
// the flight recorder's ring and what it overwrote, and the capture window. A trace written with
// every event (CUPROBE_KEEP=all, or one that never grew past three quarters of its limit) has
// nothing overwritten and no window.
struct Coverage {
  trace::KeepMode keep = trace::KeepMode::kAll;
  uint64_t ring_bytes = 0;       // 0: no ring was configured
  uint64_t ring_started_ns = 0;  // 0: routine events never went to the ring
  uint64_t recycled_chunks = 0;
  uint64_t overwritten_records = 0;
  uint64_t overwritten_calls = 0;
  uint64_t overwritten_counted = 0;
  uint64_t overwritten_first_ns = 0;
  uint64_t overwritten_last_ns = 0;  // routine calls are complete after this
  bool window = false;
  uint64_t window_lo_ns = 0;
  uint64_t window_hi_ns = UINT64_MAX;  // UINT64_MAX: to the end
  uint64_t outside_window_calls = 0;
  std::string window_marker;  // the NVTX range name that opened the window, "" for a time window
  uint64_t window_marker_opens = 0;
  bool overwritten() const { return recycled_chunks > 0; }
  // Whether routine calls (executions, synchronizations, copies) are missing from part of the run.
  bool partial() const { return overwritten() || window; }
};

// Converts raw ticks to CLOCK_MONOTONIC nanoseconds through the file's anchors.
class Clock {
 public:
  void init(trace::ClockKind kind, double ticks_per_ns_hint, std::vector<std::pair<uint64_t, uint64_t>> anchors);
  uint64_t to_ns(uint64_t ticks) const;
  uint64_t duration_ns(uint64_t start_ticks, uint64_t dur_ticks) const;
  // Both at once for a reader walking forward in time: *segment remembers which stretch
  // between anchors the last call fell in, so the search is skipped while calls stay in it.
  void convert(uint64_t start_ticks, uint64_t dur_ticks, size_t* segment, uint64_t* ts_ns, uint64_t* dur_ns) const;

 private:
  bool identity_ = true;
  double hint_ = 1.0;
  double rate_ = 1.0;  // ticks per ns over all anchors
  std::vector<std::pair<uint64_t, uint64_t>> anchors_;  // (ticks, ns), sorted by ticks
  size_t segment_of(uint64_t ticks) const;             // 0 before the first anchor, n after the last
  double at(uint64_t ticks, size_t segment) const;     // ns, unclamped
};

// What every reader of a process's trace provides, whatever the source: the binary trace file
// (TraceFile) or the JSON Lines `cuprobe dump` writes (JsonlTrace). Metadata is read when the
// trace is opened; calls are visited in timestamp order with for_each_event.
class Trace {
 public:
  virtual ~Trace() = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  const std::string& path() const { return path_; }
  uint32_t pid() const { return pid_; }
  trace::FileState state() const { return state_; }
  int end_signal() const { return end_signal_; }
  uint64_t start_ns() const { return start_mono_ns_; }
  uint64_t start_wall_ns() const { return start_real_ns_; }
  uint64_t end_ns() const { return end_mono_ns_; }  // 0 when never finalized
  uint64_t last_event_ns() const { return last_event_ns_; }
  uint64_t stat(trace::Stat s) const { return stats_[s]; }
  const Coverage& coverage() const { return coverage_; }
  uint64_t call_records() const { return call_records_; }
  size_t thread_count() const { return thread_count_; }
  // Records the reader could not use (bad lengths, unknown API ids, timestamps outside the
  // recording) and calls it left out of for_each_event; each kind is also named in diagnostics().
  uint64_t damaged_records() const { return damaged_records_; }
  uint64_t ignored_events() const { return ignored_events_; }
  // Damage above the level of one record (binary traces): chunks that could not be read at all,
  // stretches of records skipped to resynchronize, chunks whose order or size was inconsistent.
  // trace-integrity reports them with the first place each was seen.
  struct Integrity {
    uint64_t skipped_chunks = 0;  // claimed chunks not read (damaged header, blank, cut off the file)
    uint64_t resyncs = 0;         // stretches of unreadable records skipped within a chunk
    uint64_t skipped_bytes = 0;   // bytes of those stretches
    uint64_t inconsistent = 0;    // chunks out of order, missing from a thread, or with data past their size
    std::string first_chunk;      // where and why the first chunk was skipped
    std::string first_resync;
    std::string first_inconsistent;
    bool any() const { return skipped_chunks + resyncs + inconsistent > 0; }
  };
  const Integrity& integrity() const { return integrity_; }

  const Process& process() const { return process_; }
  bool has_process() const { return has_process_; }
  const std::vector<Api>& apis() const { return apis_; }
  const Api* api(uint16_t id) const { return id < apis_.size() && !apis_[id].name.empty() ? &apis_[id] : nullptr; }
  const std::string& api_name(uint16_t id) const;
  const std::map<int, Device>& devices() const { return devices_; }
  const std::map<uint32_t, int64_t>& properties() const { return properties_; }
  const std::string& string(StringId id) const;
  const std::vector<Crash>& crashes() const { return crashes_; }
  const std::vector<PinEvent>& pins() const { return pins_; }
  const std::vector<Count>& counts() const { return counts_; }
  const std::vector<CudnnHandle>& cudnn_handles() const { return handles_; }
  const std::vector<FaultRule>& fault_rules() const { return fault_rules_; }
  const std::map<uint32_t, Stack>& stacks() const { return stacks_; }
  const Stack* stack(StackId id) const;
  // Problems, knob sets and legacy algorithm results by the id a call field holds (types q, k, r);
  // nullptr / "" for 0 or an id the trace has no record of.
  const Problem* problem(ProblemId id) const { return id < problems_.size() && problems_[id].id ? &problems_[id] : nullptr; }
  const std::vector<Problem>& problems() const { return problems_; }  // by id; entries with id 0 are unused
  const std::string& knobs_text(KnobsId id) const;
  const std::vector<trace::Knob>* knobs(KnobsId id) const;
  const std::vector<trace::AlgoResult>* algo_results(AlgoResultsId id) const;
  const std::vector<Module>& modules() const { return modules_; }  // sorted by start
  const Module* module_of(uint64_t pc) const;
  const FaultRule* fault_rule(int index) const;
  // What could not be read, and changes to the file while it was read (a pass over the events
  // can add to them: read them after the passes).
  const std::vector<std::string>& diagnostics() const { return diagnostics_; }
  // Wall-clock time of a monotonic timestamp of this process (aligns processes and hosts).
  uint64_t wall_ns(uint64_t mono_ns) const { return start_real_ns_ + (mono_ns - start_mono_ns_); }

  // A process read from a facts file (cuprobe facts; analysis/facts_io.h): its facts, the parts
  // merged into one object. nullptr for a trace (its facts come from a pass over its calls, of
  // which a facts file has none).
  const nlohmann::json* facts() const { return facts_.get(); }

  // Visits every call in timestamp order (ties: thread id, then file order).
  virtual void for_each_event(const std::function<void(const Event&)>& fn) const = 0;
  // Gives back the memory the calls occupied after a pass; another pass reads them again.
  virtual void release_events() const {}

 protected:
  Trace() = default;
  void note(std::string message) const { diagnostics_.push_back(std::move(message)); }

 private:
  // Filled by the binary reader (TraceFile) and, through TraceBuilder's narrow interface, by any
  // other reader; a class derived from Trace sees none of this.
  friend class TraceFile;
  friend class TraceBuilder;

  std::string path_;
  uint32_t pid_ = 0;
  trace::FileState state_ = trace::FileState::kRecording;
  int end_signal_ = 0;
  uint64_t start_mono_ns_ = 0;
  uint64_t start_real_ns_ = 0;
  uint64_t end_mono_ns_ = 0;
  uint64_t last_event_ns_ = 0;
  uint64_t stats_[trace::kStatCount] = {};
  Coverage coverage_;
  uint64_t call_records_ = 0;
  uint64_t damaged_records_ = 0;
  mutable uint64_t ignored_events_ = 0;
  Integrity integrity_;
  size_t thread_count_ = 0;
  bool has_process_ = false;
  Process process_;
  std::vector<Api> apis_;
  std::map<int, Device> devices_;
  std::map<uint32_t, int64_t> properties_;
  std::map<uint32_t, std::string> strings_;
  std::vector<Problem> problems_;
  struct KnobSet {
    std::vector<trace::Knob> knobs;
    std::string text;
  };
  std::map<uint32_t, KnobSet> knob_sets_;
  std::map<uint32_t, std::vector<trace::AlgoResult>> algo_results_;
  std::unordered_map<std::string, uint32_t> problem_by_text_;  // add_problem's index
  std::unordered_map<std::string, uint32_t> knobs_by_text_;    // add_knobs_text's index
  // Problems a JSON Lines reader (or a test) adds: by text, a text-only one when `desc` is null.
  uint32_t add_problem(const std::string& text, uint64_t hash, const trace::ProblemDesc* desc);
  uint32_t add_knobs_text(const std::string& text);
  std::vector<Crash> crashes_;
  std::vector<PinEvent> pins_;
  std::vector<Count> counts_;
  std::vector<CudnnHandle> handles_;
  std::vector<FaultRule> fault_rules_;
  std::map<uint32_t, Stack> stacks_;
  std::vector<Module> modules_;
  mutable std::vector<std::string> diagnostics_;
  std::shared_ptr<nlohmann::json> facts_;
};

// How a reader other than the binary one (the JSON Lines reader) fills the Trace it derives
// from: what it may set, each in one call, and nothing else of Trace's fields.
class TraceBuilder {
 public:
  explicit TraceBuilder(Trace& t) : t_(t) {}

  void identity(std::string path, uint32_t pid);
  // What a process line says; seen again (the same process in two dumps), it replaces the first
  // (properties are merged).
  struct Run {
    Process process;
    uint64_t start_ns = 0, start_wall_ns = 0, end_ns = 0;
    trace::FileState state = trace::FileState::kRecording;
    int end_signal = 0;
    Coverage coverage;
    size_t threads = 0;
    std::map<uint32_t, int64_t> properties;
    std::map<int, Device> devices;
    uint64_t stats[trace::kStatCount] = {};
    std::vector<CudnnHandle> handles;
  };
  void run(Run r);
  void thread_count(size_t n) { t_.thread_count_ = n; }

  uint16_t add_api(Api a);  // its id
  Api& api(uint16_t id) { return t_.apis_[id]; }  // an API seen again gains fields
  uint32_t add_string(const std::string& s, const std::string** kept);  // its id; *kept never moves
  uint32_t add_problem(const std::string& text, uint64_t hash, const trace::ProblemDesc* desc) {
    return t_.add_problem(text, hash, desc);
  }
  uint32_t add_knobs_text(const std::string& text) { return t_.add_knobs_text(text); }
  uint32_t add_algo_results(std::vector<trace::AlgoResult> results);  // its id
  // A call kept (the reader holds the calls themselves), and the latest end of any kept call.
  void call_kept(uint64_t end_ns);
  void last_event(uint64_t end_ns) { t_.last_event_ns_ = end_ns; }

  void add_fault_rule(FaultRule r) { t_.fault_rules_.push_back(std::move(r)); }
  FaultRule* fault_rule(int index);  // nullptr when none has that index
  void stack(Stack st) { t_.stacks_[st.id] = std::move(st); }
  void module(Module m);  // kept sorted by start; the same module seen again replaces the first
  void count(const Count& c) { t_.counts_.push_back(c); }
  void pin(const PinEvent& p) { t_.pins_.push_back(p); }
  void crash(Crash c) { t_.crashes_.push_back(std::move(c)); }

  void note(std::string message) { t_.note(std::move(message)); }
  // A part of a facts file's facts (analysis/facts_io.h): `value` set under `key`, or with
  // `items`, its items appended to the list there.
  void facts_part(const std::string& key, nlohmann::json value, bool items);
  // What the reader of the original trace found wrong with it, as a facts file carries it.
  void restore_integrity(const Trace::Integrity& integrity, uint64_t damaged_records, uint64_t ignored_events);
  // Records the input held that could not be used (lines); `ignored`: calls left out of the pass.
  void damaged(uint64_t records, bool ignored);

 private:
  Trace& t_;
};

// A binary trace file, mapped read-only.
class TraceFile : public Trace {
 public:
  static Result<std::unique_ptr<TraceFile>> open(const std::string& path);
  ~TraceFile() override;

  void for_each_event(const std::function<void(const Event&)>& fn) const override;
  void release_events() const override;
  void map_in() const;

 private:
  TraceFile() = default;
  bool load(std::string* error);
  bool map_file(std::string* error);
  bool check_header(const trace::FileHeader& hdr, std::string* error);
  uint64_t claimed_in_file(const trace::FileHeader& hdr, uint64_t in_file);
  void set_time_bounds(const trace::FileHeader& hdr, uint64_t claimed);
  void read_chunks(const trace::FileHeader& hdr, uint64_t claimed, uint64_t in_file,
                   std::vector<std::pair<uint64_t, uint64_t>>& anchors);
  void settle_out_of_range();
  void resolve_after_scan(const trace::FileHeader& hdr, std::vector<std::pair<uint64_t, uint64_t>> anchors);
  void note_unusable_calls();
  void merge_counts();
  void scan_chunk(uint32_t index, const trace::ChunkHeader* c, std::vector<std::pair<uint64_t, uint64_t>>& anchors);
  // One record of a chunk, as the record-type readers get it (scan_chunk has checked its size).
  struct RecordAt {
    const char* rec;
    size_t size;
    uint32_t chunk, off, tid;
    const trace::RecordHeader* h;
    std::vector<std::pair<uint64_t, uint64_t>>& anchors;
    // A record with text is exactly its fixed part and its text, rounded up to 8 bytes, as the
    // shim writes it: a size that is not is damage (a record of another type read as this one).
    bool fits(size_t fixed, uint64_t text) const {
      return size >= fixed && text <= size - fixed && trace::align8(uint32_t(fixed + text)) == size;
    }
  };
  using RecordReader = void (TraceFile::*)(const RecordAt&);
  static const std::array<RecordReader, 17> kRecordReaders;
  void read_call(const RecordAt& at);
  void read_api_info(const RecordAt& at);
  void read_process_info(const RecordAt& at);
  void read_string(const RecordAt& at);
  void read_device_info(const RecordAt& at);
  void read_thread_end(const RecordAt& at);
  void read_anchor(const RecordAt& at);
  void read_crash(const RecordAt& at);
  void read_property(const RecordAt& at);
  void read_fault_rule(const RecordAt& at);
  void read_stack(const RecordAt& at);
  void read_module(const RecordAt& at);
  void read_problem(const RecordAt& at);
  void read_knobs(const RecordAt& at);
  void read_algo_results(const RecordAt& at);
  void read_pin(const RecordAt& at);
  void note_handle(uint32_t tid, const trace::CallRecord* r);
  void damaged(const char* what, uint32_t chunk, uint32_t off);
  void read_coverage(const trace::FileHeader& hdr);
  bool in_range(const trace::CallRecord* r) const;
  void check_unchanged(const char* when) const;
  void read_claimed_chunk(uint32_t index, bool last, std::vector<std::pair<uint64_t, uint64_t>>& anchors);
  uint32_t resync(const char* data, uint32_t from, uint32_t used) const;
  void skipped_chunk(uint32_t index, const std::string& why);
  void inconsistent(const std::string& where);
  void check_chunk_order();

  struct ChunkRef {
    uint32_t seq;
    uint32_t index;
    uint32_t valid_bytes;  // records readable without error
    // Stretches [first, second) of damaged records skipped to the next readable one (rare).
    std::vector<std::pair<uint32_t, uint32_t>> skips;
  };
  struct Thread {
    uint32_t tid;
    uint32_t key;  // ChunkHeader::tid as written: a kept stream has trace::kKeptStreamBit
    std::vector<ChunkRef> chunks;  // sorted by seq
  };
  struct RawCount {
    uint32_t tid;
    uint32_t cls;  // kApiCounted or kApiQuiet
    int slot;
    int device;
    uint64_t calls;
  };

  // The mapping (or, packed, the unpacked copy, which release_events gives back and map_in makes again).
  mutable const char* base_ = nullptr;
  mutable size_t size_ = 0;
  uint64_t file_size_ = 0;  // of the file itself (packed or not)
  bool packed_ = false;     // a zstd file (cuprobe pack)
  bool unpack(std::string* error) const;
  uint32_t chunk_size_ = trace::kChunkSize;
  uint64_t last_ticks_ = 0;
  Clock clock_;
  std::vector<std::pair<uint32_t, const trace::CrashRecord*>> raw_crashes_;  // (tid, record)
  std::vector<uint32_t> raw_env_;  // string ids of Property::kEnvironment records
  std::vector<uint32_t> raw_versions_;                           // string ids of Property::kLibraryVersion records
  std::vector<std::pair<uint32_t, trace::PinRecord>> raw_pins_;  // (tid, record)
  std::vector<RawCount> raw_counts_;
  std::vector<std::pair<uint32_t, const trace::CallRecord*>> maybe_handles_;  // (tid, record) before the API table
  std::vector<std::pair<uint32_t, trace::PyFrame>> raw_python_;  // (stack id, frame) until strings are known
  std::map<uint32_t, Thread> threads_;
  // Calls whose ticks fall outside [lo_ticks_, hi_ticks_] cannot belong to the recording
  // (a damaged record): left out of the events and counted.
  uint64_t lo_ticks_ = 0;
  uint64_t hi_ticks_ = UINT64_MAX;
  uint64_t out_of_range_ = 0;
  std::pair<uint32_t, uint32_t> first_out_of_range_;  // chunk, offset
  uint64_t first_out_of_range_ticks_ = 0;
  uint64_t last_ticks_any_ = 0;  // the latest call end, out-of-range calls included
  std::vector<uint64_t> calls_per_api_;  // by API id, to name calls of ids with no API-info record
  struct Damage {
    uint64_t count = 0;
    uint32_t chunk = 0, off = 0;  // the first one
  };
  std::map<std::string, Damage> damage_;
  std::vector<std::array<uint64_t, trace::kMaxCallArgs + 2>> arg_counts_;  // by API id: calls by argument count
  bool recycled_ = false;  // the flight recorder recycled chunks: stale records may follow a chunk's used size
  int guard_slot_ = -1;  // this mapping's entry in the SIGBUS guard
  // The file as it was opened, to tell when it changed under the reader.
  uint64_t dev_ = 0, ino_ = 0, mtime_ns_ = 0;
  mutable bool change_noted_ = false;
};

// Opens a binary trace file, or a JSON Lines file written by `cuprobe dump` ("-": standard
// input). A JSON Lines input may hold several processes: one Trace each.
Result<std::vector<std::unique_ptr<Trace>>> open_traces(const std::string& path);
// JSON Lines held in memory, read as open_traces reads a file; `name` stands for it in messages.
Result<std::vector<std::unique_ptr<Trace>>> read_jsonl_text(const std::string& text, const std::string& name);

// All trace files under a run directory (or the one file named, or "-"), sorted by path.
// Entries of a run directory that are not regular files (FIFOs, sockets, symbolic links, which
// may point anywhere) are not read; each is named in *skipped when given.
Result<std::vector<std::string>> find_trace_files(const std::string& path, std::vector<std::string>* skipped = nullptr);

// Every trace under `paths` (each as find_trace_files takes it), opened as open_traces opens them:
// what is skipped or cannot be opened is added to *warnings (when given) and left out; an error
// when a path cannot be listed at all. No trace opened is not an error here: callers say what it
// means for them.
Result<std::vector<std::unique_ptr<Trace>>> open_all(const std::vector<std::string>& paths,
                                                     std::vector<std::string>* warnings);

const char* property_name(uint32_t key);
// CUPROBE_KEEP's words ("all", "auto", "last"), as dump and analyze --json write them.
const char* keep_name(trace::KeepMode mode);
trace::KeepMode keep_from_name(const std::string& name);  // kAll for a word it does not know
const char* library_name(trace::Library lib);

}  // namespace cuprobe::reader
