// The cuprobe trace file format, shared by the shim (the only writer) and every reader.
//
// One file per traced process. The writer maps the file MAP_SHARED and appends fixed-layout
// records into per-thread chunks; each record becomes visible to readers when its chunk's
// `used` field is advanced with a release store, so a process killed at any instant (SIGKILL,
// the OOM killer) leaves a file that is readable up to its last completed record.
//
// Layout: a FileHeader padded to kFileHeaderSize bytes, then chunks of header.chunk_size bytes
// each (chunk i starts at kFileHeaderSize + i * chunk_size). A chunk is a ChunkHeader followed
// by records, each 8-byte aligned and starting with a RecordHeader whose size covers the whole
// record. Timestamps are raw ticks of the clock named in FileHeader::clock_kind; readers convert
// them to CLOCK_MONOTONIC nanoseconds through the anchors (pairs of tick and nanosecond
// readings) in the file header, in chunk headers and in kAnchor records.
//
// This header is plain data: no library calls, usable from the shim's hot path. Bump kVersion
// for any change a reader of the previous version would misread; add a feature bit for
// additions old readers can skip (unknown record types are skipped by size).
// docs/trace-format.md is the prose description of everything here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuprobe::trace {

inline constexpr char kMagic[8] = {'C', 'U', 'P', 'R', 'O', 'B', 'E', '1'};
inline constexpr uint32_t kVersion = 2;  // 2: role flags, 64-bit ApiInfo flags, problem/knob/result records
// 64 KiB keeps every chunk aligned to the largest page size in use (aarch64 with 64 KiB pages),
// so each segment of the file can be mapped on its own.
inline constexpr uint32_t kFileHeaderSize = 64 * 1024;
inline constexpr uint32_t kChunkSize = 64 * 1024;
inline constexpr uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK"
inline constexpr int kMaxDevices = 32;
inline constexpr int kCountSlots = 12;    // counted APIs a trace can hold (per device)
inline constexpr int kCountDevices = 8;   // devices counted separately per counted API
inline constexpr int kQuietSlots = 64;    // quiet APIs a trace can hold (not per device)
inline constexpr uint32_t kMetaTid = 0;  // ChunkHeader::tid of chunks written for the process as a whole
// ChunkHeader::tid of a chunk of a thread's kept stream (flight recorder): tid | kKeptStreamBit.
// A thread's kept chunks are ordered by their own seq, apart from its routine chunks.
inline constexpr uint32_t kKeptStreamBit = 0x80000000u;
inline constexpr int kFaultRuleSlots = 33;  // fault rules a plan can hold, plus the memory cap

enum class ClockKind : uint32_t {
  kMonotonicNs = 1,  // ticks are CLOCK_MONOTONIC nanoseconds
  kX86Tsc = 2,       // invariant TSC; converted through anchors
  kArmCntvct = 3,    // aarch64 virtual counter; converted through anchors
};

enum class FileState : uint32_t {
  kRecording = 0,  // never finalized: still running, or ended without a clean exit
  kExited = 1,     // finalized by a normal exit
  kSignaled = 2,   // finalized by a fatal signal (end_signal)
  kExeced = 3,     // the process exec'd another program, which continues in a file of its own
  kSnapshot = 4,   // a copy `cuprobe snapshot` made of a trace still recording: running then
};
// The process ended and its trace was finalized (an end anchor is in the header).
constexpr bool finalized(FileState s) {
  return s == FileState::kExited || s == FileState::kSignaled || s == FileState::kExeced;
}

// Counters of things that went wrong (or were skipped) inside the traced process.
enum Stat : uint32_t {
  kStatDroppedEvents = 0,    // events lost because no chunk could be had
  kStatMissingSymbols = 1,   // calls whose real function could not be found
  kStatDuplicateLibraries = 2,  // a library was mapped more than once (first copy used)
  kStatTraceLimitHit = 3,    // 1 when the size limit (CUPROBE_MAX_MB) stopped the trace growing
  kStatGrowFailures = 4,     // fallocate/mmap failures when growing the file
  kStatMirrorFull = 5,       // cuDNN descriptors not mirrored (too many alive at once)
  kStatFaultPlanRejected = 6,  // 1 when CUPROBE_FAULTS or CUPROBE_MEM_CAP could not be read: nothing injected
  kStatCapTableFull = 7,     // allocations the memory cap could not remember (their frees are not credited)
  kStatStacksUntracked = 8,  // stacks taken after the stack table filled up: written again, not shared
  // Records of the always-kept kinds (searches, plan selections, failures, allocations, problems,
  // stacks) lost because the file limit was reached even after the flight recorder's ring gave up
  // all the chunks it could spare.
  kStatKeptDropped = 9,
  // Why Python frames are not read from threads that released the GIL (shim/python_layout.h
  // LayoutStatus): 0 read (or no Python in the process), 1 unknown CPython version, 2 a
  // free-threaded build (no Python frames at all), 3 no _Py_DebugOffsets, 4 its version is not
  // the running one, 5 its offsets are out of bounds.
  kStatPythonFramesRefused = 10,
  kStatCount = 16,
};
inline constexpr const char* kStatNames[kStatCount] = {
    "dropped_events", "missing_symbols", "duplicate_libraries", "trace_limit_hit",
    "grow_failures",  "mirror_full",     "fault_plan_rejected", "cap_table_full",
    "stacks_untracked", "kept_dropped", "python_frames_refused", nullptr,
    nullptr,          nullptr,           nullptr,               nullptr};

// Header features (FileHeader::features): what a reader must know to tell the file's coverage.
enum Feature : uint64_t {
  kFeatureFlightRecorder = 1u << 0,  // RingInfo: routine events may have been overwritten
  kFeatureCaptureWindow = 1u << 1,   // RingInfo::window_*: routine events only inside a window
};

// What a trace keeps when it grows long (CUPROBE_KEEP; docs/flight-recorder.md).
enum class KeepMode : uint32_t {
  kAll = 0,   // every event until the size limit, none after it (traces before the flight recorder)
  kLast = 1,  // routine events go to a ring of ring_bytes from the start: the last ring_bytes of them
  kAuto = 2,  // every event until three quarters of the limit, then a ring of the last quarter
};

// The flight recorder and the capture window, as the shim ran them. Routine events (calls other
// than the always-kept kinds) are kept in a ring of chunks that are overwritten oldest first once
// it is full; the always-kept records (searches, plan selections, failures, injected faults,
// allocations, problems, stacks, metadata) go to chunks that are never overwritten. Updated by the
// shim as chunks are recycled (single writer, under its ring lock).
struct RingInfo {
  uint32_t keep_mode;  // KeepMode
  uint32_t pad;
  uint64_t ring_bytes;            // routine events kept: at most about this many bytes of them
  uint64_t started_ticks;         // when routine events started going to the ring; 0: never
  uint64_t recycled_chunks;       // ring chunks overwritten
  uint64_t overwritten_records;   // records lost with them
  uint64_t overwritten_calls;     // of which calls
  uint64_t overwritten_counted;   // counted calls (kernel launches, queries) in their counters
  uint64_t overwritten_first_ticks;  // start of the earliest overwritten call
  uint64_t overwritten_last_ticks;   // end of the latest overwritten call: routine events are
                                     // complete from here on
  // Capture window (kFeatureCaptureWindow): routine calls that started outside
  // [window_lo_ticks, window_hi_ticks) were counted, not written.
  uint64_t window_lo_ticks;
  uint64_t window_hi_ticks;
  uint64_t outside_window_calls;
  // A window opened by an NVTX range (CUPROBE_WINDOW_NVTX): the range name's string id (0 for a
  // time window only), and how many times a range of that name was opened.
  uint64_t window_marker;
  uint64_t window_marker_opens;
  uint64_t reserved[2];
};

struct Anchor {
  uint64_t ticks;
  uint64_t mono_ns;  // CLOCK_MONOTONIC
  uint64_t real_ns;  // CLOCK_REALTIME: the wall-clock anchor that aligns processes and hosts
};

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // kFileHeaderSize
  uint64_t features;
  uint32_t chunk_size;
  uint32_t pid;
  uint32_t chunks_claimed;  // updated atomically; chunks [0, chunks_claimed) may hold data
  uint32_t state;           // FileState, updated atomically
  int32_t end_signal;
  uint32_t clock_kind;      // ClockKind
  double ticks_per_ns;      // in-process calibration; readers prefer anchors when they have two
  Anchor start;             // when the shim was loaded (or the process forked)
  Anchor end;               // valid when state != kRecording
  uint64_t proc_start_time; // /proc/<pid>/stat starttime: tells a pid's exec'd image from reuse
  uint64_t stats[kStatCount];
  // Fault mode, per rule of the plan (FaultRule records), the memory cap in the last slot:
  // calls that passed the rule's filters, and calls it replaced with an error.
  uint64_t fault_matched[kFaultRuleSlots];
  uint64_t fault_injected[kFaultRuleSlots];
  RingInfo ring;  // zero in files written before the flight recorder: KeepMode::kAll
};
static_assert(sizeof(FileHeader) <= kFileHeaderSize);
static_assert(offsetof(FileHeader, ring) % 8 == 0);
static_assert(offsetof(FileHeader, stats) % 8 == 0);

struct ChunkHeader {
  uint32_t magic;     // kChunkMagic once the chunk is claimed
  uint32_t tid;       // writing thread (kMetaTid for process-wide records)
  uint32_t used;      // bytes of committed records after this header; release-stored
  uint32_t seq;       // n-th chunk of this thread, from 0
  uint64_t anchor_ticks;
  uint64_t anchor_mono_ns;
  // Calls made while this chunk was the thread's current one, of counted APIs (kernel
  // launches, event and stream queries) per device: counts[slot][device], device
  // kCountDevices meaning "unknown or higher"; and of quiet APIs (descriptor calls whose
  // success is only counted): quiet_counts[slot]. Slots come from ApiInfo::count_slot.
  uint64_t counts[kCountSlots][kCountDevices + 1];
  uint64_t quiet_counts[kQuietSlots];
};
inline constexpr uint32_t kChunkHeaderSize = 1408;
static_assert(sizeof(ChunkHeader) <= kChunkHeaderSize);
inline constexpr uint32_t kChunkDataSize = kChunkSize - kChunkHeaderSize;

enum class RecordType : uint16_t {
  kCall = 1,         // one intercepted call (CallRecord)
  kApiInfo = 2,      // name, library, flags and argument fields of one API id
  kProcessInfo = 3,  // who this process is
  kString = 4,       // an interned string (id -> text)
  kDeviceInfo = 5,   // one CUDA device the process used
  kThreadEnd = 6,    // a thread exited
  kAnchor = 7,       // a (ticks, mono_ns) pair for clock conversion
  kCrash = 8,        // a fatal signal arrived; names the call in flight on that thread
  kProperty = 9,     // a numbered process property (library versions)
  kFaultRule = 10,   // one rule of the fault plan in force (FaultRuleRecord)
  kStack = 11,       // a distinct call stack, native and Python (StackRecord)
  kModule = 12,      // a loaded module, for offline symbolization (ModuleRecord)
  kProblem = 13,     // a distinct cuDNN problem (problem.h ProblemRecordHead + ProblemDesc)
  kKnobs = 14,       // a distinct knob set of an engine configuration (problem.h KnobsRecord)
  kAlgoResults = 15, // the algorithms a legacy Find/Get call returned (problem.h AlgoResultsRecord)
  kPin = 16,         // what plan pinning did for one plan selection (PinRecord)
};

// Common prefix of every record. Records never exceed a chunk, so 16 bits of size suffice.
struct RecordHeader {
  uint8_t type;   // RecordType
  uint8_t flags;  // kCall: CallFlags
  uint16_t size;  // bytes, header included, multiple of 8
  uint16_t aux;   // kCall, kApiInfo: api id
  int16_t aux2;   // kCall: current device, -1 when unknown
};
static_assert(sizeof(RecordHeader) == 8);

inline constexpr uint32_t align8(uint32_t n) { return (n + 7u) & ~7u; }

// Header of a record other than a call.
constexpr RecordHeader make_header(RecordType type, uint32_t size, uint16_t aux = 0) {
  return RecordHeader{uint8_t(type), 0, uint16_t(size), aux, 0};
}

// Flags of a call record: which optional words follow its argument fields, in this order.
enum CallFlags : uint8_t {
  kCallHasStream = 1u << 0,     // a stream handle
  kCallLongDuration = 1u << 1,  // the full 64-bit duration (dur_ticks did not fit in 32 bits)
  kCallInjected = 1u << 2,      // the fault plan replaced the call: rule | (match number << 16)
  kCallHasStack = 1u << 3,      // the id of the call's stack (StackRecord)
  kCallSample = 1u << 4,        // the shim made this call itself (a memory sample), not the program
};

// One intercepted call: 24 bytes, then the argument fields (meaning from the API's ApiInfo),
// then [stream][64-bit duration][fault][stack] as flagged. The number of fields is the size's remainder.
struct CallRecord {
  RecordHeader h;  // h.aux: api id; h.aux2: device; h.flags: CallFlags
  int32_t ret;     // the return code the caller saw
  uint32_t dur_ticks;  // 0xffffffff with kCallLongDuration: see the tail
  uint64_t start_ticks;
  uint64_t tail[];
};
static_assert(sizeof(CallRecord) == 24);
inline constexpr int kMaxCallArgs = 16;

// Library an API belongs to.
// kTorch: functions of PyTorch's own libraries (libc10.so) that report what the CUDA libraries
// cannot see, such as the size of the request behind an out-of-memory error.
// kNccl: NCCL's communicator set-up (libnccl.so.2), which names the process's rank when no
// launcher variable does. Readers that predate it name it "unknown" and skip nothing.
// kCublasLt: cuBLASLt (libcublasLt.so), whose heuristics choose an algorithm per matmul shape as
// cuDNN's choose plans (issue 33): PyTorch calls it for addmm with a bias, fp8 scaled_mm and,
// when preferred, every matmul.
enum class Library : uint16_t { kCudart = 1, kCudnn = 2, kDriver = 3, kTorch = 4, kNccl = 5, kCublasLt = 6 };

// Classification of an API, written into the trace so readers need no built-in name lists.
enum ApiFlags : uint64_t {
  kApiDeviceAlloc = 1u << 0,  // allocates device memory (fields: ptr, size)
  kApiDeviceFree = 1u << 1,   // frees device memory (field: ptr)
  kApiHostAlloc = 1u << 2,    // allocates or registers host memory
  kApiHostFree = 1u << 3,
  kApiSync = 1u << 4,         // blocks the host until device work completes
  kApiCounted = 1u << 5,      // counted per thread and device, no event per call by default
  kApiInitsDevice = 1u << 6,  // success implies the current device's context exists
  kApiMemcpy = 1u << 7,
  kApiEvent = 1u << 8,
  kApiStream = 1u << 9,
  kApiError = 1u << 10,       // queries or clears the sticky error state
  kApiFaultable = 1u << 11,   // a fault rule may replace the call
  kApiQuiet = 1u << 12,       // recorded only when it fails or the shim asks; otherwise counted
  kApiCudnnExec = 1u << 13,   // runs cuDNN work on the GPU
  kApiAlgoSearch = 1u << 14,  // asks cuDNN for algorithms (heuristics or timed search)
  kApiWorkspaceQuery = 1u << 15,
  // Device memory through the driver's virtual memory API. With kApiDeviceAlloc/kApiDeviceFree:
  // the allocation is physical memory named by a handle (fields handle, size), not an address.
  kApiPhysical = 1u << 16,
  kApiVaReserve = 1u << 17,   // reserves a virtual address range (fields ptr, size)
  kApiVaFree = 1u << 18,      // gives a reserved range back (fields ptr, size)
  kApiMap = 1u << 19,         // maps physical memory into a reserved range (fields ptr, size, handle)
  kApiUnmap = 1u << 20,       // (fields ptr, size)
  kApiMemInfo = 1u << 21,     // reports the device's free and total memory (fields free, total)
  kApiEntryPoint = 1u << 22,  // looks up a driver function by name (fields symbol, fn, ...)
  // A framework reports an out-of-memory error it is about to raise (fields size, device): the
  // request as the framework saw it, whatever allocation call failed underneath, if any.
  kApiOomReport = 1u << 23,
  // With kApiDeviceAlloc/kApiDeviceFree: a stream-ordered pool's allocation (cudaMallocAsync,
  // cuMemAllocAsync, ...). Cheap by design, and freed memory stays in the pool, still in use on the
  // device, until the pool trims it.
  kApiPooled = 1u << 24,
  // Roles of single cuDNN and CUDA functions the analysis follows (it never compares names).
  kApiPlanFinalize = 1u << 25,    // cudnnBackendFinalize (fields desc, kind, problem, engine, knobs, ...)
  kApiPlanExecute = 1u << 26,     // cudnnBackendExecute (fields plan, problem, engine, knobs, ...)
  kApiLegacyFind = 1u << 27,      // cudnnFind*Algorithm(Ex): a timed search (fields problem, results, ...)
  kApiLegacyGet = 1u << 28,       // cudnnGet*Algorithm_v7: heuristics (fields problem, results, ...)
  kApiLegacyConvExec = 1u << 29,  // cudnnConvolution{Forward,BackwardData,BackwardFilter,BiasActivationForward}
  kApiHandleCreate = 1u << 30,    // cudnnCreate (field handle): the handle and its device
  kApiEventTiming = 1u << 31,     // cudaEventElapsedTime (field ms): the time between two events
  // Creates an NCCL communicator (fields comm, nranks, rank: the new communicator's size and this
  // process's rank in it).
  kApiCommInit = 1ull << 32,
  // Records an event on a stream (field event): with kApiEventTiming, tells which calls a measured
  // time spans (a benchmark search times one plan execution between two records).
  kApiEventRecord = 1ull << 33,
  // Reports an attribute of a stream-ordered memory pool (fields pool, attr, value): with the
  // memory samples, the bytes a pool holds reserved (cudaMemPoolAttrReservedMemCurrent) and in use
  // (cudaMemPoolAttrUsedMemCurrent), so that memory a pool keeps after frees counts as seen.
  kApiPoolInfo = 1ull << 34,
  // cuBLASLt's heuristics (cublasLtMatmulAlgoGetHeuristic; fields problem, results, max_workspace,
  // requested): the algorithms it offers for a matmul problem, each with its configuration.
  kApiBlasHeuristic = 1ull << 35,
  // A cuBLASLt matmul (cublasLtMatmul; fields problem, engine (the algorithm id, -1 when cuBLASLt
  // chose), knobs (its configuration), workspace): what ran.
  kApiBlasMatmul = 1ull << 36,
};

// Role flags a later cuprobe added without a new trace format: a reader adds them, by API name,
// to the flags of a file recorded before them.
inline constexpr uint64_t kApiLaterRoleFlags = kApiEventRecord | kApiPoolInfo;

// Field encoding inside ApiInfo::fields: "name:t,name:t" with t one of
//   p pointer or handle (printed in hex)   u unsigned   i signed   x flags (hex)
//   f float64 bit pattern                  s interned string id
//   q problem id (kProblem record)         k knob set id (kKnobs)   r algorithm results id (kAlgoResults)
// Id 0 of any kind means none (unknown).
struct ApiInfo {
  RecordHeader h;  // h.aux is the API id
  uint16_t library;
  uint16_t name_len;
  uint32_t fields_len;
  uint64_t flags;      // ApiFlags
  int32_t count_slot;  // kApiCounted: ChunkHeader::counts row; kApiQuiet: quiet_counts index; else -1
  uint32_t pad;
  char text[];  // name, then fields (no terminators)
};
static_assert(sizeof(ApiInfo) == 32);

struct ProcessInfo {
  RecordHeader h;
  uint32_t pid;
  uint32_t ppid;
  int32_t rank;        // -1 when not set
  int32_t local_rank;  // -1 when not set
  int32_t world_size;  // -1 when not set
  uint32_t uid;
  uint32_t hostname_len;
  uint32_t cmdline_len;  // NUL-separated arguments
  uint32_t exe_len;
  uint32_t cwd_len;
  char text[];  // hostname, cmdline, exe, cwd
};
static_assert(sizeof(ProcessInfo) == 48);

struct StringRecord {
  RecordHeader h;
  uint32_t id;
  uint32_t len;
  char text[];
};
static_assert(sizeof(StringRecord) == 16);

// A device as the driver describes it (cuDeviceGetName, cuDeviceTotalMem_v2, cuDeviceGetUuid_v2,
// cuDeviceGetAttribute: shim/driver_queries.h). What the driver did not answer is -1 (numbers),
// zero (total_mem, every uuid byte) or an empty name.
struct DeviceInfo {
  RecordHeader h;
  int32_t index;
  int32_t cc_major;
  int32_t cc_minor;
  int32_t multiprocessors;
  uint64_t total_mem;
  uint8_t uuid[16];
  int32_t pci_domain;
  int32_t pci_bus;
  int32_t pci_device;
  uint32_t pad;
  char name[256];
};
static_assert(sizeof(DeviceInfo) == 320);

struct ThreadEnd {
  RecordHeader h;
  uint64_t ticks;
};

struct AnchorRecord {
  RecordHeader h;
  uint64_t ticks;
  uint64_t mono_ns;
};

struct CrashRecord {
  RecordHeader h;
  int32_t signal;
  uint16_t api_in_flight;  // 0xffff when none
  uint16_t pad;
  uint64_t ticks;
  uint64_t in_flight_start_ticks;
};

enum class Property : uint32_t {
  kCudaRuntimeVersion = 1,
  kCudaDriverVersion = 2,
  kCudnnVersion = 3,
  kCudnnCudartVersion = 4,
  kLaunchEvents = 5,  // 1 when every kernel launch is an event
  // This process's rank and the communicator's size, from the NCCL communicator with the most
  // ranks it created so far (the world's, under PyTorch's ProcessGroupNCCL): written again
  // whenever a larger one is created, the last record counts. Launchers such as
  // torch.multiprocessing.spawn set no RANK variable; this is how such a process's rank is known.
  kNcclRank = 6,
  kNcclWorldSize = 7,
  // Plan pinning (CUPROBE_PIN_PLANS; docs/plan-pinning.md): how many pinned plans the process
  // read from its plan file (0: the file could not be used, nothing was steered).
  kPinnedPlans = 8,
  // One per environment variable the process had of those kRecordedEnv names (set when the
  // process started tracing): the id of an interned string "NAME=VALUE" (the value cut to
  // kMaxEnvValue bytes). What the allocator and libraries were told (PYTORCH_CUDA_ALLOC_CONF, ...),
  // for advice that fits the job's configuration and for comparing runs.
  kEnvironment = 9,
  // The search budget in force (CUPROBE_SEARCH_BUDGET; docs/search-budget.md), in hundredths of a
  // percent of the job's time (500: 5%). Absent: no budget.
  kSearchBudget = 10,
  // One per library version the shim learned that no other record holds: the id of an interned
  // string "NAME=VERSION", NAME one of "torch" (PyTorch's torch/version.py beside the libc10 the
  // process mapped), "nccl" (ncclGetVersion, at the first communicator), "nvidia_driver" (the
  // kernel module's release, /proc/driver/nvidia/version). For comparing runs (cuprobe diff).
  kLibraryVersion = 11,
};

// The environment variables a trace records (Property::kEnvironment): these names, and every name
// that starts with one of kRecordedEnvPrefixes. Configuration only: nothing that usually holds a
// credential.
inline constexpr const char* kRecordedEnv[] = {
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "CUDA_LAUNCH_BLOCKING",
    "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING", "CUDA_DEVICE_MAX_CONNECTIONS", "CUBLAS_WORKSPACE_CONFIG",
    "CUBLASLT_WORKSPACE_SIZE", "NVIDIA_TF32_OVERRIDE", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT",
    "TORCH_CUDNN_V8_API_DISABLED", "TORCH_CUDNN_SDPA_ENABLED", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "CUDNN_LOGLEVEL_DBG", "OMP_NUM_THREADS", "TORCH_BLAS_PREFER_CUBLASLT", "DISABLE_ADDMM_CUDA_LT",
    "TORCH_CUBLASLT_UNIFIED_WORKSPACE", "TORCH_CUDNN_SDPA_PREFERRED"};
// CUBLASLT_: cuBLASLt's own settings (CUBLASLT_WORKSPACE_SIZE, CUBLASLT_LOG_LEVEL, ...).
inline constexpr const char* kRecordedEnvPrefixes[] = {"CUPROBE_", "NCCL_", "TORCH_NCCL_", "CUBLASLT_"};
inline constexpr uint32_t kMaxEnvValue = 1024;
inline constexpr uint32_t kMaxEnvRecords = 128;

struct PropertyRecord {
  RecordHeader h;
  uint32_t key;  // Property
  uint32_t pad;
  int64_t value;
};

// Plan pinning (docs/plan-pinning.md). The shim steers a plan selection of a problem its plan
// file names to the pinned engine and knobs (or legacy algorithm) by failing the other candidates
// fast: those calls are recorded as failed with CUDNN_STATUS_NOT_SUPPORTED and a fault word whose
// rule is kPinFaultRule (never a rule of the fault plan). One PinRecord per selection says how it
// ended for pinning.
inline constexpr uint16_t kPinFaultRule = 0xffff;
enum class PinOutcome : uint32_t {
  kPinned = 1,          // the selection was steered to the pinned plan
  kNotOffered = 2,      // stepped aside: the pinned plan was not among cuDNN's candidates
  kSkipped = 3,         // stepped aside: the application went past the pinned plan without building it
                        // (its own filters); later selections of the problem in this process are left alone
  kOtherGpu = 4,        // stepped aside: the file pins this problem for other GPU models only
  kOtherCudnn = 5,      // stepped aside: ... for other cuDNN versions only
  kOtherAlignment = 6,  // stepped aside: ... for other data alignments only
  kPinnedFailed = 7,    // stepped aside: the pinned plan failed (finalize, execution, workspace query);
                        // later selections of the problem in this process are not steered
  kBroken = 8,          // stepped aside: the pinned plan failed earlier in this process
  // The search budget (CUPROBE_SEARCH_BUDGET; docs/search-budget.md) answered a new problem's
  // selection with cuDNN's heuristic choice instead of a benchmark search: `engine` and `knobs`
  // are the plan it ended on, `search_ms` what a search was expected to cost (the mean of the
  // process's searches so far), `pinned_ms` the searches' share of the job's time then (percent).
  kBudgeted = 9,
  // The search budget searched a budgeted problem later, when its plan had run kDeferRuns times
  // and the budget allowed (a deferred search): the shim timed the candidates the application had
  // asked for (its filters passed) that fit the budgeted plan's workspace, on the application's own
  // data, and runs the fastest in place of the budgeted plan from then on. `engine` and `knobs`:
  // the plan now running; `pinned_ms` its time per run, `replaced_ms` the budgeted plan's,
  // `search_ms` what the deferred search took; flag kPinMoved when the plan changed.
  kSearchedLater = 10,
  kCount = 11,
};
inline constexpr const char* kPinOutcomeNames[] = {"?",         "pinned",      "not-offered",     "skipped",
                                                   "other-gpu", "other-cudnn", "other-alignment", "pinned-failed",
                                                   "broken",    "budgeted",    "searched-later"};
struct PinRecord {
  RecordHeader h;
  uint32_t outcome;     // PinOutcome
  uint32_t problem;     // interned problem id
  uint64_t problem_hash;
  uint64_t ticks;
  int64_t engine;       // the pinned engine (backend) or algorithm (legacy); -1 when none applies
  uint32_t knobs;       // the pinned knob set's id when the selection ended on it, else 0
  uint32_t flags;       // kPinLegacy, kPinHeuristicsAnswered, kPinMoved, kPinNoFallback
  float pinned_ms;      // the pinned plan's time as the plan file measured it, -1 unknown
  float search_ms;      // what the search it replaces took in the run the file came from, -1 unknown
  float
      replaced_ms;  // kSearchedLater: the budgeted plan's time per run, else -1 (older traces' records stop before it)
  uint32_t reserved;
};
static_assert(sizeof(PinRecord) == 64);
inline constexpr uint16_t kPinRecordV1Size = 56;       // written before replaced_ms (read as -1)
inline constexpr uint32_t kPinLegacy = 1;              // a legacy Find/Get selection
inline constexpr uint32_t kPinHeuristicsAnswered = 2;  // the shim answered the heuristics query itself
inline constexpr uint32_t kPinMoved = 4;               // kSearchedLater: another plan replaced the budgeted one
inline constexpr uint32_t kPinNoFallback = 8;  // kBudgeted: cuDNN's fallback list was answered empty (a ranked plan built)

// One rule of the fault plan the process ran under. index kFaultRuleSlots - 1 is the memory
// cap (name "mem-cap", text the cap as given). Text: the name, then the rule as written.
struct FaultRuleRecord {
  RecordHeader h;
  uint32_t index;
  uint32_t scope;  // 0: matches counted per process, 1: per thread
  uint32_t name_len;
  uint32_t text_len;
  char text[];
};
static_assert(sizeof(FaultRuleRecord) == 24);

// A distinct stack, written once and referenced by id from call records: the native return
// addresses, innermost first (the shim's own frames left out), then the innermost Python frames
// of the calling thread when it held the GIL.
struct PyFrame {
  uint32_t file;  // interned string ids
  uint32_t function;
  int32_t line;
  uint32_t pad;
};
struct StackRecord {
  RecordHeader h;
  uint32_t id;
  uint16_t n_native;
  uint16_t n_python;
  uint64_t pcs[];  // n_native, then n_python PyFrame
};
static_assert(sizeof(StackRecord) == 16);
static_assert(sizeof(PyFrame) == 16);

// A module mapped into the process: addresses in [start, end) belong to it, at load bias
// `bias` (address = bias + the module's own virtual address). Text: path, then the GNU build id
// bytes.
struct ModuleRecord {
  RecordHeader h;
  uint64_t bias;
  uint64_t start;
  uint64_t end;
  uint32_t path_len;
  uint32_t build_id_len;
  char text[];
};
static_assert(sizeof(ModuleRecord) == 40);

inline constexpr uint16_t kNoApi = 0xffff;

}  // namespace cuprobe::trace
