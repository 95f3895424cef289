// The SQLite export's tables (docs/sql.md), each declared once: a column list per table (name, SQL
// type as CREATE TABLE declares it, what the column means), from which everything else follows —
// the CREATE TABLE statements, the INSERT statements' placeholders, a row struct per table whose
// fields are the columns in their order (rows are filled by column name and bound in declared
// order, so a binder cannot put a value in the wrong column), and docs/sql.md's column tables
// (tests/export/sqlite_test.cpp fails when a block there differs from this file, and rewrites
// them with CUPROBE_UPDATE_DOCS=1).
//
// To add a column: add a line to its table's list (at the end, so that `SELECT *` and positional
// readers of older exports keep working), set the new field where sqlite.cpp fills that row (a
// field left unset fails the export, naming it), and regenerate docs/sql.md. To add a table: a
// list, a line in CUPROBE_SQLITE_TABLES, a block in docs/sql.md. Renaming or removing a column, or
// changing its meaning, bumps kSchemaVersion (sqlite.cpp).
//
// Every time is wall-clock (Unix epoch) nanoseconds; see docs/sql.md's conventions.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>

namespace cuprobe::exporter::sqlite_schema {

// Meanings several columns share (docs/sql.md shows consecutive columns of the same type and
// meaning on one line).
inline constexpr char kAsInCalls[] = "as in `calls`";
inline constexpr char kAsInCallsLaunch[] = "as in `calls` (`dur_ns` is host time: the launch, not the kernel)";
inline constexpr char kFromTheLauncher[] =
    "from the launcher's variables (`RANK`, ...), the rank also from the NCCL communicator it set up; NULL when "
    "unknown";

// X(name, SQL type, meaning), in the table's column order.
#define CUPROBE_SQLITE_META(X)                                                                                        \
  X(key, "TEXT PRIMARY KEY",                                                                                          \
    "what the row holds: `cuprobe_version`; `schema_version` (1); `trace_format` (the trace format version the "      \
    "reader speaks); "                                                                                                \
    "`exported_at` (ISO 8601, UTC) and `exported_at_ns`; `sources` (the paths exported, a JSON array); `time_unit`; " \
    "`summary` (the analysis's summary, JSON as in `cuprobe analyze --json`, docs/analyze-json.md)")                  \
  X(value, "TEXT", "its value, as text (JSON for `sources` and `summary`)")

#define CUPROBE_SQLITE_PROCESSES(X)                                                                                  \
  X(id, "INTEGER PRIMARY KEY", "key")                                                                                \
  X(pid, "INTEGER", "process and parent process ids on its host")                                                    \
  X(ppid, "INTEGER", "process and parent process ids on its host")                                                   \
  X(host, "TEXT", "host name")                                                                                       \
  X(rank, "INTEGER", kFromTheLauncher)                                                                               \
  X(local_rank, "INTEGER", kFromTheLauncher)                                                                         \
  X(world_size, "INTEGER", kFromTheLauncher)                                                                         \
  X(label, "TEXT", "how reports name it: `rank 0 (pid 123 on host h)`, `pid 123 on host h (cuda:0)`")                \
  X(command, "TEXT", "the command line, first 200 characters")                                                       \
  X(exe, "TEXT", "the executable's path")                                                                            \
  X(trace_path, "TEXT", "the trace file it came from")                                                               \
  X(trace_state, "TEXT",                                                                                             \
    "how its trace ended: `exited`, `signaled`, `execed` (it exec'd another program, which continues in a trace of " \
    "its own), `snapshot` (a copy `cuprobe snapshot` made while it ran) or `recording` (never finalized: killed, "   \
    "or still running)")                                                                                             \
  X(start_ns, "INTEGER", "when recording began")                                                                     \
  X(first_ns, "INTEGER", "its first call's start and its last call's end; NULL when it made none")                   \
  X(last_ns, "INTEGER", "its first call's start and its last call's end; NULL when it made none")                    \
  X(job_start_ns, "INTEGER", "its first CUDA/cuDNN work (the analysis's job start); NULL when none")                 \
  X(events, "INTEGER", "calls recorded (rows of `calls`)")                                                           \
  X(threads, "INTEGER", "threads that made calls")

#define CUPROBE_SQLITE_STEPS(X)                                    \
  X(process_id, "INTEGER REFERENCES processes(id)", "the process") \
  X(step, "INTEGER", "0, 1, ...")                                  \
  X(start_ns, "INTEGER", "when the step began")

#define CUPROBE_SQLITE_DEVICES(X)                                                                                 \
  X(id, "INTEGER PRIMARY KEY", "key")                                                                             \
  X(process_id, "INTEGER REFERENCES processes(id)", "the process")                                                \
  X(device, "INTEGER", "its CUDA ordinal in that process")                                                        \
  X(name, "TEXT",                                                                                                 \
    "the device's name as the CUDA runtime reports it (`NVIDIA H200`; the sample output below, recorded against " \
    "cuprobe's test doubles, shows the double's `cuprobe test double 1`)")                                        \
  X(total_mem, "INTEGER", "bytes")                                                                                \
  X(uuid, "TEXT", "as `nvidia-smi` prints them: the same physical GPU across processes")                          \
  X(pci_bus_id, "TEXT", "as `nvidia-smi` prints them: the same physical GPU across processes")                    \
  X(cc, "TEXT", "compute capability, `9.0`")                                                                      \
  X(multiprocessors, "INTEGER", "SM count; NULL when not recorded")

#define CUPROBE_SQLITE_APIS(X)                                               \
  X(id, "INTEGER PRIMARY KEY", "key (the same for an API in every process)") \
  X(name, "TEXT", "`cudaMalloc`, `cudnnBackendExecute`, ...")                \
  X(library, "TEXT", "`cudart`, `driver`, `cudnn`, `nccl`, `torch`")         \
  X(flags, "INTEGER", "the API's role bits (schema/cuprobe/trace_format.h `ApiFlags`: allocation, sync, ...)")

#define CUPROBE_SQLITE_PROBLEMS(X)                                                                   \
  X(id, "INTEGER PRIMARY KEY", "key: one id for a problem in every process (matched by its text)")   \
  X(hash, "TEXT", "cuprobe's problem hash, hex; NULL for problems known only from a finding's text") \
  X(text, "TEXT",                                                                                    \
    "`conv_fwd x[64,64,56,56]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32 -> y[...]`")

#define CUPROBE_SQLITE_STACKS(X)                                                                            \
  X(id, "INTEGER PRIMARY KEY", "key")                                                                       \
  X(process_id, "INTEGER REFERENCES processes(id)", "the process")                                          \
  X(trace_stack, "INTEGER", "the id the trace gives it")                                                    \
  X(site, "TEXT",                                                                                           \
    "where in the application, as findings cite it: the application's innermost Python line, then the two " \
    "innermost native frames, joined by ` < `")                                                             \
  X(python_frames, "INTEGER", "its Python frames (rows of `frames` of kind `python`)")                      \
  X(native_frames, "INTEGER", "its native frames (rows of `frames` of kind `native`)")

#define CUPROBE_SQLITE_FRAMES(X)                                       \
  X(stack_id, "INTEGER REFERENCES stacks(id)", "its stack")            \
  X(depth, "INTEGER", "0 innermost; Python frames first, then native") \
  X(kind, "TEXT", "`python` or `native`")                              \
  X(pc, "INTEGER", "native return address; NULL for a Python frame")   \
  X(module, "TEXT", "the native frame's file name; NULL when unknown") \
  X(function, "TEXT", "the function (demangled); NULL when unknown")   \
  X(file, "TEXT", "the source file; NULL when unknown")                \
  X(line, "INTEGER", "the line in it; NULL when unknown")              \
  X(text, "TEXT", "the frame as `cuprobe dump` prints it")

#define CUPROBE_SQLITE_CALLS(X)                                                                           \
  X(id, "INTEGER PRIMARY KEY", "key; in time order within a process")                                     \
  X(process_id, "INTEGER", "who made it")                                                                 \
  X(tid, "INTEGER", "who made it")                                                                        \
  X(api_id, "INTEGER", "what was called")                                                                 \
  X(ts_ns, "INTEGER", "when it began, how long it took on the host")                                      \
  X(dur_ns, "INTEGER", "when it began, how long it took on the host")                                     \
  X(device, "INTEGER", "the current device")                                                              \
  X(stream, "INTEGER", "the stream it was given (as an integer handle), NULL when it takes none")         \
  X(ret, "INTEGER", "what it returned (`cudaError_t`, `CUresult`, `cudnnStatus_t`, `ncclResult_t`)")      \
  X(stack_id, "INTEGER",                                                                                  \
    "its call stack, NULL when none was taken (stacks are taken for allocations, searches and failures, " \
    "docs/stacks.md)")                                                                                    \
  X(flags, "INTEGER",                                                                                     \
    "bit 1: a memory sample the shim took itself, not the program's call; bit 2: injected by fault mode")

#define CUPROBE_SQLITE_SYNCS(X)                       \
  X(call_id, "INTEGER PRIMARY KEY", "the call (key)") \
  X(process_id, "INTEGER", kAsInCalls)                \
  X(tid, "INTEGER", kAsInCalls)                       \
  X(api_id, "INTEGER", kAsInCalls)                    \
  X(ts_ns, "INTEGER", kAsInCalls)                     \
  X(dur_ns, "INTEGER", kAsInCalls)                    \
  X(device, "INTEGER", kAsInCalls)                    \
  X(ret, "INTEGER", kAsInCalls)

#define CUPROBE_SQLITE_FAILURES(X)                                                 \
  X(call_id, "INTEGER PRIMARY KEY", "the call (key)")                              \
  X(process_id, "INTEGER", kAsInCalls)                                             \
  X(tid, "INTEGER", kAsInCalls)                                                    \
  X(api_id, "INTEGER", kAsInCalls)                                                 \
  X(library, "TEXT", "the API's library")                                          \
  X(ts_ns, "INTEGER", kAsInCalls)                                                  \
  X(dur_ns, "INTEGER", kAsInCalls)                                                 \
  X(device, "INTEGER", kAsInCalls)                                                 \
  X(ret, "INTEGER", kAsInCalls)                                                    \
  X(injected, "INTEGER", "1 when fault mode made this failure (also in `faults`)") \
  X(stack_id, "INTEGER", kAsInCalls)

#define CUPROBE_SQLITE_FAULTS(X)                                          \
  X(call_id, "INTEGER PRIMARY KEY", "the call (key)")                     \
  X(process_id, "INTEGER", kAsInCalls)                                    \
  X(tid, "INTEGER", kAsInCalls)                                           \
  X(api_id, "INTEGER", kAsInCalls)                                        \
  X(ts_ns, "INTEGER", kAsInCalls)                                         \
  X(ret, "INTEGER", kAsInCalls)                                           \
  X(rule, "TEXT", "the fault rule's name (`mem-cap` for the memory cap)") \
  X(k, "INTEGER", "the call's match number for that rule")

#define CUPROBE_SQLITE_SEARCHES(X)                                                                       \
  X(id, "INTEGER PRIMARY KEY", "key")                                                                    \
  X(process_id, "INTEGER REFERENCES processes(id)", "where")                                             \
  X(tid, "INTEGER", "where")                                                                             \
  X(device, "INTEGER", "where")                                                                          \
  X(api, "TEXT", "`backend`, or the legacy function")                                                    \
  X(mode, "TEXT", "`benchmark` or `heuristic`")                                                          \
  X(problem_id, "INTEGER REFERENCES problems(id)", "what it selected a plan for")                        \
  X(start_ns, "INTEGER", "from its operation graph (or `Find` call) to when the winner started running") \
  X(end_ns, "INTEGER", "from its operation graph (or `Find` call) to when the winner started running")   \
  X(dur_ns, "INTEGER", "from its operation graph (or `Find` call) to when the winner started running")   \
  X(stack_id, "INTEGER REFERENCES stacks(id)", "the stack of the call that began it")                    \
  X(candidates, "INTEGER", "plans considered (rows of `candidates`)")                                    \
  X(winner_id, "INTEGER", "the chosen candidate (`candidates.id`); NULL when the trace ended first")     \
  X(winner_engine, "INTEGER", "the chosen plan's engine (legacy: algorithm)")                            \
  X(winner_knobs, "TEXT", "the chosen plan's knobs (legacy: math type)")                                 \
  X(search_workspace, "INTEGER", "the largest allocation made during the search and used by it (bytes)") \
  X(probe_bytes, "INTEGER", "the largest allocation given straight back unused: an allocator probing")   \
  X(align, "INTEGER", "smallest alignment of the problem's data (bytes); NULL unknown")                  \
  X(plans_rejected, "INTEGER", "candidates whose build failed")                                          \
  X(complete, "INTEGER", "0 when the trace ended before the winner ran")                                 \
  X(steered, "TEXT", "`pinned` (plan pinning) or `budgeted` (the search budget); NULL: not steered")

#define CUPROBE_SQLITE_CANDIDATES(X)                                                               \
  X(id, "INTEGER PRIMARY KEY", "key")                                                              \
  X(search_id, "INTEGER REFERENCES searches(id)", "its search")                                    \
  X(idx, "INTEGER", "its position in the search (0, 1, ...)")                                      \
  X(plan, "INTEGER", "backend plan handle (0 for legacy)")                                         \
  X(engine, "INTEGER", "backend engine global index, or legacy algorithm")                         \
  X(knobs, "TEXT", "backend knobs (`tile=2,stages=3`), legacy math type")                          \
  X(workspace, "INTEGER", "bytes it needs")                                                        \
  X(build_status, "INTEGER", "its finalize status (`cudnnStatus_t`; legacy: the result's status)") \
  X(exec_status, "INTEGER", "its last execution's status; NULL when never executed")               \
  X(executions, "INTEGER", "times it ran during the search")                                       \
  X(last_exec_ns, "INTEGER", "its last execution; NULL when never")                                \
  X(time_ms, "REAL", "measured time (ms; the least of its timed runs); NULL when not timed")       \
  X(notes, "INTEGER", "cuDNN's numerical notes bits")                                              \
  X(injected, "INTEGER", "1 when a failure of it was made by fault mode")                          \
  X(winner, "INTEGER", "1 for the search's winner")

#define CUPROBE_SQLITE_EXECUTIONS(X)                                                                               \
  X(call_id, "INTEGER PRIMARY KEY", "the call (key)")                                                              \
  X(process_id, "INTEGER", kAsInCallsLaunch)                                                                       \
  X(tid, "INTEGER", kAsInCallsLaunch)                                                                              \
  X(ts_ns, "INTEGER", kAsInCallsLaunch)                                                                            \
  X(dur_ns, "INTEGER", kAsInCallsLaunch)                                                                           \
  X(device, "INTEGER", kAsInCallsLaunch)                                                                           \
  X(ret, "INTEGER", kAsInCallsLaunch)                                                                              \
  X(backend, "INTEGER", "1 for `cudnnBackendExecute`, 0 for a legacy call")                                        \
  X(engine, "INTEGER", "the plan's engine global index (legacy: algorithm)")                                       \
  X(knobs, "TEXT", "the plan's knobs (legacy: empty)")                                                             \
  X(workspace, "INTEGER", "bytes it was given; NULL unknown")                                                      \
  X(problem_id, "INTEGER", "the problem")                                                                          \
  X(candidate, "INTEGER",                                                                                          \
    "1 for a run that a plan selection in progress made (timing or trying a candidate), 0 for the application's "  \
    "work. Caveat: after a heuristic selection the winner's own runs count as candidates until the thread's next " \
    "selection begins; to find the plan a process worked with, take the plan it ran most (query 5)")

#define CUPROBE_SQLITE_ALLOCATIONS(X)                                                                              \
  X(call_id, "INTEGER", "the call")                                                                                \
  X(process_id, "INTEGER", kAsInCalls)                                                                             \
  X(tid, "INTEGER", kAsInCalls)                                                                                    \
  X(api_id, "INTEGER", kAsInCalls)                                                                                 \
  X(ts_ns, "INTEGER", kAsInCalls)                                                                                  \
  X(dur_ns, "INTEGER", kAsInCalls)                                                                                 \
  X(device, "INTEGER", kAsInCalls)                                                                                 \
  X(address, "INTEGER", "device address (`cuMemCreate`: the physical handle)")                                     \
  X(size, "INTEGER", "bytes asked for (a free: bytes it gave back)")                                               \
  X(ok, "INTEGER", "0 when the allocation failed (out of memory, or injected)")                                    \
  X(ret, "INTEGER", kAsInCalls)                                                                                    \
  X(freed, "INTEGER", "1 for a free")                                                                              \
  X(alloc_ts_ns, "INTEGER", "for a free: when that memory was allocated")                                          \
  X(owner, "TEXT",                                                                                                 \
    "who asked: `PyTorch caching allocator`, `PyTorch caching allocator (expandable segments)`, `NCCL`, `cuDNN`, " \
    "`cuBLAS`, another module's file name, `unknown`")                                                             \
  X(search_problem_id, "INTEGER",                                                                                  \
    "for memory allocated while its thread was selecting a plan: that problem (a search's workspace)")             \
  X(stack_id, "INTEGER", kAsInCalls)

#define CUPROBE_SQLITE_MEMORY(X)                                                       \
  X(call_id, "INTEGER", "the allocation or free that changed it")                      \
  X(process_id, "INTEGER", "when and where")                                           \
  X(ts_ns, "INTEGER", "when and where")                                                \
  X(device, "INTEGER", "when and where")                                               \
  X(owner, "TEXT", "whose memory changed")                                             \
  X(owner_bytes, "INTEGER", "that owner's live bytes on that device after the change") \
  X(total_bytes, "INTEGER", "every owner's live bytes on that device after the change")

#define CUPROBE_SQLITE_FINDINGS(X)                                                               \
  X(id, "INTEGER PRIMARY KEY", "key; in the report's order (severity, then estimated impact)")   \
  X(rule, "TEXT", "the rule's id (`cuprobe explain RULE`)")                                      \
  X(severity, "TEXT", "`error`, `warning`, `info`")                                              \
  X(title, "TEXT", "as the report prints them")                                                  \
  X(message, "TEXT", "as the report prints them")                                                \
  X(evidence, "TEXT", "the rule's evidence, JSON text (`json_extract(evidence, '$.searches')`)") \
  X(fix, "TEXT", "what to do")                                                                   \
  X(impact_s, "REAL", "estimated time lost (s), for ordering")                                   \
  X(at_ns, "INTEGER", "when what it concerns happened; NULL for a finding about the whole job")

#define CUPROBE_SQLITE_FINDING_PROCESSES(X)                       \
  X(finding_id, "INTEGER REFERENCES findings(id)", "the finding") \
  X(process_id, "INTEGER REFERENCES processes(id)",               \
    "a process it concerns (by pid; a pid that two hosts share names both)")

#define CUPROBE_SQLITE_FINDING_CALL_SITES(X)                          \
  X(finding_id, "INTEGER REFERENCES findings(id)", "the finding")     \
  X(idx, "INTEGER", "its position in the finding's list (0, 1, ...)") \
  X(site, "TEXT", "where in the application, as the report lists it")

#define CUPROBE_SQLITE_FINDING_PROBLEMS(X)                        \
  X(finding_id, "INTEGER REFERENCES findings(id)", "the finding") \
  X(problem_id, "INTEGER REFERENCES problems(id)", "a problem involved")

#define CUPROBE_SQLITE_WARNINGS(X)    \
  X(id, "INTEGER PRIMARY KEY", "key") \
  X(text, "TEXT", "an input that could not be read, or damage the reader met, as `cuprobe analyze` lists it")

// T(table, its columns, what follows the column list in CREATE TABLE, large), in schema order.
// `large`: rows written as b-tree pages (sqlite_pages.h) unless rows go through SQL.
#define CUPROBE_SQLITE_TABLES(T)                                      \
  T(meta, CUPROBE_SQLITE_META, " WITHOUT ROWID", false)               \
  T(processes, CUPROBE_SQLITE_PROCESSES, "", false)                   \
  T(steps, CUPROBE_SQLITE_STEPS, "", false)                           \
  T(devices, CUPROBE_SQLITE_DEVICES, "", false)                       \
  T(apis, CUPROBE_SQLITE_APIS, "", false)                             \
  T(problems, CUPROBE_SQLITE_PROBLEMS, "", false)                     \
  T(stacks, CUPROBE_SQLITE_STACKS, "", false)                         \
  T(frames, CUPROBE_SQLITE_FRAMES, "", false)                         \
  T(calls, CUPROBE_SQLITE_CALLS, "", true)                            \
  T(syncs, CUPROBE_SQLITE_SYNCS, "", true)                            \
  T(failures, CUPROBE_SQLITE_FAILURES, "", true)                      \
  T(faults, CUPROBE_SQLITE_FAULTS, "", false)                         \
  T(searches, CUPROBE_SQLITE_SEARCHES, "", false)                     \
  T(candidates, CUPROBE_SQLITE_CANDIDATES, "", false)                 \
  T(executions, CUPROBE_SQLITE_EXECUTIONS, "", true)                  \
  T(allocations, CUPROBE_SQLITE_ALLOCATIONS, "", true)                \
  T(memory, CUPROBE_SQLITE_MEMORY, "", true)                          \
  T(findings, CUPROBE_SQLITE_FINDINGS, "", false)                     \
  T(finding_processes, CUPROBE_SQLITE_FINDING_PROCESSES, "", false)   \
  T(finding_call_sites, CUPROBE_SQLITE_FINDING_CALL_SITES, "", false) \
  T(finding_problems, CUPROBE_SQLITE_FINDING_PROBLEMS, "", false)     \
  T(warnings, CUPROBE_SQLITE_WARNINGS, "", false)

struct Column {
  const char* name;
  const char* type;  // as CREATE TABLE declares it: "INTEGER", "TEXT PRIMARY KEY", "INTEGER REFERENCES stacks(id)"
  const char* doc;   // docs/sql.md's "meaning"
};

struct Table {
  const char* name;
  const Column* columns;
  size_t count;
  const char* options;  // after the column list
  bool large;
  // Its first column is its INTEGER PRIMARY KEY (the rowid): a record stores it as NULL.
  constexpr bool rowid_first() const { return std::string_view(columns[0].type) == "INTEGER PRIMARY KEY"; }
};

namespace columns {
#define CUPROBE_SQLITE_COLUMN(name, type, doc) Column{#name, type, doc},
#define CUPROBE_SQLITE_COLUMN_LIST(table, COLUMNS, options, large) \
  inline constexpr Column table[] = {COLUMNS(CUPROBE_SQLITE_COLUMN)};
CUPROBE_SQLITE_TABLES(CUPROBE_SQLITE_COLUMN_LIST)
#undef CUPROBE_SQLITE_COLUMN_LIST
#undef CUPROBE_SQLITE_COLUMN
}  // namespace columns

enum class TableId : int {
#define CUPROBE_SQLITE_TABLE_ID(table, COLUMNS, options, large) table,
  CUPROBE_SQLITE_TABLES(CUPROBE_SQLITE_TABLE_ID)
#undef CUPROBE_SQLITE_TABLE_ID
};

inline constexpr Table kTables[] = {
#define CUPROBE_SQLITE_TABLE(table, COLUMNS, options, large) \
  Table{#table, columns::table, std::size(columns::table), options, large},
    CUPROBE_SQLITE_TABLES(CUPROBE_SQLITE_TABLE)
#undef CUPROBE_SQLITE_TABLE
};

constexpr const Table& table(TableId id) { return kTables[int(id)]; }

// One value of a row: an integer, a real, text or NULL. Text is not copied: what it points to
// must outlive the row's insert (for the large tables, the next flush; sqlite.cpp).
struct Cell {
  enum Kind : uint8_t { kUnset, kNull, kInt, kReal, kText };
  Kind kind = kUnset;  // a column the code filling the row forgot: the insert fails, naming it
  uint32_t size = 0;   // of the text
  union {
    int64_t i = 0;
    double d;
    const char* s;
  };

  constexpr Cell() = default;
  template <std::integral T>
  constexpr Cell(T v) : kind(kInt), i(int64_t(v)) {}  // NOLINT: a row's fields take values by assignment
  template <std::floating_point T>
  constexpr Cell(T v) : kind(kReal), d(double(v)) {}                                  // NOLINT
  Cell(const std::string& v) : kind(kText), size(uint32_t(v.size())), s(v.data()) {}  // NOLINT
  Cell(std::string&&) = delete;  // a temporary would be gone before the insert
  Cell(std::string_view v) : kind(kText), size(uint32_t(v.size())), s(v.data()) {}  // NOLINT
  Cell(const char* v) : kind(kText), size(uint32_t(std::strlen(v))), s(v) {}        // NOLINT
  static constexpr Cell null() {
    Cell c;
    c.kind = kNull;
    return c;
  }
  // `v`, or NULL where it is `none` (unknown, not applicable).
  static constexpr Cell or_null(int64_t v, int64_t none) { return v == none ? null() : Cell(v); }
};

// A struct per table, named as the table, with a Cell per column named as the column, in the
// table's order; each() hands the cells over in that order.
namespace rows {
#define CUPROBE_SQLITE_FIELD(name, type, doc) Cell name;
#define CUPROBE_SQLITE_VISIT(name, type, doc) f(name);
#define CUPROBE_SQLITE_ROW(table, COLUMNS, options, large) \
  struct table {                                           \
    static constexpr TableId kTable = TableId::table;      \
    COLUMNS(CUPROBE_SQLITE_FIELD)                          \
    template <typename F>                                  \
    void each(F&& f) const {                               \
      COLUMNS(CUPROBE_SQLITE_VISIT)                        \
    }                                                      \
  };
CUPROBE_SQLITE_TABLES(CUPROBE_SQLITE_ROW)
#undef CUPROBE_SQLITE_ROW
#undef CUPROBE_SQLITE_VISIT
#undef CUPROBE_SQLITE_FIELD
}  // namespace rows

// The declared columns and the row structs agree (the same list made both; this checks the
// expansion): one field per column, nothing else.
#define CUPROBE_SQLITE_CHECK_ROW(table, COLUMNS, options, large)                          \
  static_assert(sizeof(rows::table) == sizeof(Cell) * std::size(columns::table), #table); \
  static_assert(std::size(columns::table) <= 24, #table ": more columns than a record holds (sqlite_pages.h)");
CUPROBE_SQLITE_TABLES(CUPROBE_SQLITE_CHECK_ROW)
#undef CUPROBE_SQLITE_CHECK_ROW

// Every table's CREATE TABLE statement, in schema order; with `temporary`, only the small tables,
// as temporary tables (where they wait while the large tables' pages are written, sqlite.cpp).
std::string create_statements(bool temporary = false);
// "INSERT INTO <prefix><table> VALUES (?,...)", `rows` rows of placeholders.
std::string insert_statement(const Table& t, size_t rows = 1, const char* prefix = "");
// The table named `name`, or nullptr.
const Table* table_named(std::string_view name);

}  // namespace cuprobe::exporter::sqlite_schema
