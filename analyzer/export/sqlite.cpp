// `cuprobe export --format sqlite`: a job's timeline as a SQLite database (schema and example
// queries: docs/sql.md).
//
// Rows are inserted as walk_job hands items over, in one transaction with every statement
// prepared once, so that memory stays at what the walk itself holds plus the interned ids (APIs,
// problems, stacks): a recording of any length exports in bounded memory. Rows are kept narrow
// (integers; text only where a row is rare or the text is what a query wants, such as knobs), the
// largest tables are inserted many rows to a statement, and the indexes are built once after the
// last insert rather than kept up to date row by row. Every time is wall-clock (Unix epoch) nanoseconds, so that the
// processes of a job, and a PyTorch profiler trace of the same run, line up.
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "export/export.h"
#include "export/sqlite_pages.h"
#include "trace/reader.h"
#include "trace/symbolize.h"

#include "version.h"

namespace cuprobe::exporter {

namespace {

// Bumped whenever a table or column changes meaning, is renamed or removed (docs/sql.md).
constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE processes (
  id INTEGER PRIMARY KEY, pid INTEGER, ppid INTEGER, host TEXT, rank INTEGER, local_rank INTEGER,
  world_size INTEGER, label TEXT, command TEXT, exe TEXT, trace_path TEXT, trace_state TEXT,
  start_ns INTEGER, first_ns INTEGER, last_ns INTEGER, job_start_ns INTEGER, events INTEGER,
  threads INTEGER);
CREATE TABLE steps (process_id INTEGER REFERENCES processes(id), step INTEGER, start_ns INTEGER);
CREATE TABLE devices (
  id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id), device INTEGER, name TEXT,
  total_mem INTEGER, uuid TEXT, pci_bus_id TEXT, cc TEXT, multiprocessors INTEGER);
CREATE TABLE apis (id INTEGER PRIMARY KEY, name TEXT, library TEXT, flags INTEGER);
CREATE TABLE problems (id INTEGER PRIMARY KEY, hash TEXT, text TEXT);
CREATE TABLE stacks (
  id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id), trace_stack INTEGER,
  site TEXT, python_frames INTEGER, native_frames INTEGER);
CREATE TABLE frames (
  stack_id INTEGER REFERENCES stacks(id), depth INTEGER, kind TEXT, pc INTEGER, module TEXT,
  function TEXT, file TEXT, line INTEGER, text TEXT);
CREATE TABLE calls (
  id INTEGER PRIMARY KEY, process_id INTEGER, tid INTEGER, api_id INTEGER, ts_ns INTEGER,
  dur_ns INTEGER, device INTEGER, stream INTEGER, ret INTEGER, stack_id INTEGER, flags INTEGER);
CREATE TABLE syncs (
  call_id INTEGER PRIMARY KEY, process_id INTEGER, tid INTEGER, api_id INTEGER, ts_ns INTEGER,
  dur_ns INTEGER, device INTEGER, ret INTEGER);
CREATE TABLE failures (
  call_id INTEGER PRIMARY KEY, process_id INTEGER, tid INTEGER, api_id INTEGER, library TEXT,
  ts_ns INTEGER, dur_ns INTEGER, device INTEGER, ret INTEGER, injected INTEGER, stack_id INTEGER);
CREATE TABLE faults (
  call_id INTEGER PRIMARY KEY, process_id INTEGER, tid INTEGER, api_id INTEGER, ts_ns INTEGER,
  ret INTEGER, rule TEXT, k INTEGER);
CREATE TABLE searches (
  id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id), tid INTEGER, device INTEGER,
  api TEXT, mode TEXT, problem_id INTEGER REFERENCES problems(id), start_ns INTEGER, end_ns INTEGER,
  dur_ns INTEGER, stack_id INTEGER REFERENCES stacks(id), candidates INTEGER, winner_id INTEGER,
  winner_engine INTEGER, winner_knobs TEXT, search_workspace INTEGER, align INTEGER,
  plans_rejected INTEGER, complete INTEGER);
CREATE TABLE candidates (
  id INTEGER PRIMARY KEY, search_id INTEGER REFERENCES searches(id), idx INTEGER, plan INTEGER,
  engine INTEGER, knobs TEXT, workspace INTEGER, build_status INTEGER, exec_status INTEGER,
  executions INTEGER, last_exec_ns INTEGER, time_ms REAL, notes INTEGER, injected INTEGER,
  winner INTEGER);
CREATE TABLE executions (
  call_id INTEGER PRIMARY KEY, process_id INTEGER, tid INTEGER, ts_ns INTEGER, dur_ns INTEGER,
  device INTEGER, ret INTEGER, backend INTEGER, engine INTEGER, knobs TEXT, workspace INTEGER,
  problem_id INTEGER, candidate INTEGER);
CREATE TABLE allocations (
  call_id INTEGER, process_id INTEGER, tid INTEGER, api_id INTEGER, ts_ns INTEGER, dur_ns INTEGER,
  device INTEGER, address INTEGER, size INTEGER, ok INTEGER, ret INTEGER, freed INTEGER,
  alloc_ts_ns INTEGER, owner TEXT, search_problem_id INTEGER, stack_id INTEGER);
CREATE TABLE memory (
  call_id INTEGER, process_id INTEGER, ts_ns INTEGER, device INTEGER, owner TEXT,
  owner_bytes INTEGER, total_bytes INTEGER);
CREATE TABLE findings (
  id INTEGER PRIMARY KEY, rule TEXT, severity TEXT, title TEXT, message TEXT, evidence TEXT,
  fix TEXT, impact_s REAL, at_ns INTEGER);
CREATE TABLE finding_processes (finding_id INTEGER REFERENCES findings(id), process_id INTEGER REFERENCES processes(id));
CREATE TABLE finding_call_sites (finding_id INTEGER REFERENCES findings(id), idx INTEGER, site TEXT);
CREATE TABLE finding_problems (finding_id INTEGER REFERENCES findings(id), problem_id INTEGER REFERENCES problems(id));
CREATE TABLE warnings (id INTEGER PRIMARY KEY, text TEXT);
)";

// Built once every row is in (see the file comment). The largest tables (calls, executions,
// syncs) get none: their ids are their keys and in time order within a process, the documented
// queries scan them whole (GROUP BY), and each index cost as much as a third of the export on a
// 2 M-call job (calls(stack_id) 0.17 s, executions(problem_id) 0.27 s, syncs(api_id) 0.06 s of
// 1.5 s, docs/sql.md): a session that needs one creates it.
constexpr const char* kIndexes = R"(
CREATE INDEX steps_process ON steps(process_id, step);
CREATE INDEX devices_process ON devices(process_id, device);
CREATE INDEX stacks_process ON stacks(process_id, trace_stack);
CREATE INDEX frames_stack ON frames(stack_id, depth);
CREATE INDEX failures_api ON failures(api_id);
CREATE INDEX searches_problem ON searches(problem_id);
CREATE INDEX searches_process ON searches(process_id, start_ns);
CREATE INDEX candidates_search ON candidates(search_id);
CREATE INDEX allocations_process ON allocations(process_id, device, ts_ns);
CREATE INDEX memory_device ON memory(process_id, device, owner);
CREATE INDEX finding_processes_finding ON finding_processes(finding_id);
CREATE INDEX finding_call_sites_finding ON finding_call_sites(finding_id);
CREATE INDEX finding_problems_finding ON finding_problems(finding_id);
)";

struct SqlError {
  std::string message;
};

// One prepared statement, bound column by column (1-based, in the order of its placeholders)
// and run; reused for every row.
class Insert {
 public:
  Insert() = default;
  Insert(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
      throw SqlError{fmt::format("cannot prepare \"{}\": {}", sql, sqlite3_errmsg(db))};
    }
  }
  Insert(const Insert&) = delete;
  Insert& operator=(const Insert&) = delete;
  Insert(Insert&& o) noexcept { *this = std::move(o); }
  Insert& operator=(Insert&& o) noexcept {
    std::swap(db_, o.db_);
    std::swap(stmt_, o.stmt_);
    return *this;
  }
  ~Insert() { sqlite3_finalize(stmt_); }
  sqlite3_stmt* stmt() const { return stmt_; }

  Insert& i(int64_t v) {
    sqlite3_bind_int64(stmt_, ++col_, v);
    return *this;
  }
  Insert& u(uint64_t v) { return i(int64_t(v)); }
  Insert& null() {
    sqlite3_bind_null(stmt_, ++col_);
    return *this;
  }
  // A value, or NULL where it is `none` (unknown).
  Insert& i_or_null(int64_t v, int64_t none) { return v == none ? null() : i(v); }
  Insert& d(double v) {
    sqlite3_bind_double(stmt_, ++col_, v);
    return *this;
  }
  // The text must live until run(): it is not copied (a temporary would not).
  Insert& t(std::string&&) = delete;
  Insert& t(const std::string& v) {
    sqlite3_bind_text(stmt_, ++col_, v.data(), int(v.size()), SQLITE_STATIC);
    return *this;
  }
  Insert& t(const char* v, int n) {
    sqlite3_bind_text(stmt_, ++col_, v, n, SQLITE_STATIC);
    return *this;
  }
  Insert& t(const char* v) {
    sqlite3_bind_text(stmt_, ++col_, v, -1, SQLITE_STATIC);
    return *this;
  }
  // A value held for later (Batch) or decoded from a record (sqlite_pages::decode).
  Insert& value(const sqlite_pages::Value& v) {
    switch (v.type) {
      case sqlite_pages::Value::kInt:
        return i(v.i);
      case sqlite_pages::Value::kNull:
        return null();
      case sqlite_pages::Value::kReal:
        return d(v.d);
      case sqlite_pages::Value::kText:
      case sqlite_pages::Value::kBlob:
        return t(v.s.data(), int(v.s.size()));
    }
    return null();
  }
  void run() {
    col_ = 0;
    int rc = sqlite3_step(stmt_);
    sqlite3_reset(stmt_);
    if (rc != SQLITE_DONE) throw SqlError{sqlite3_errmsg(db_)};
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  int col_ = 0;
};

void exec(sqlite3* db, const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : sqlite3_errmsg(db);
    sqlite3_free(msg);
    throw SqlError{m};
  }
}

// Rows of a large table, inserted `rows` to a statement: running a statement costs about as
// much as the row it inserts. Values wait here until the batch is full or flushed; text is not
// copied, so what it points to must outlive the next flush.
class Batch {
 public:
  Batch(sqlite3* db, const char* table, int columns, size_t rows) : columns_(columns), rows_(rows) {
    std::string row = "(?";
    for (int c = 1; c < columns; ++c) row += ",?";
    row += ")";
    std::string sql = fmt::format("INSERT INTO {} VALUES {}", table, row);
    one_ = Insert(db, sql.c_str());
    for (size_t r = 1; r < rows; ++r) sql += "," + row;
    all_ = Insert(db, sql.c_str());
    values_.reserve(size_t(columns) * rows);
  }
  Batch& i(int64_t v) { return put(Value{Value::kInt, v, 0, {}}); }
  Batch& u(uint64_t v) { return i(int64_t(v)); }
  Batch& null() { return put(Value{Value::kNull, 0, 0, {}}); }
  Batch& i_or_null(int64_t v, int64_t none) { return v == none ? null() : i(v); }
  Batch& d(double v) { return put(Value{Value::kReal, 0, v, {}}); }
  Batch& t(std::string&&) = delete;  // the text is not copied
  Batch& t(const std::string& v) { return put(Value{Value::kText, 0, 0, v}); }
  Batch& t(const char* v) { return put(Value{Value::kText, 0, 0, v}); }
  void run() {
    if (values_.size() == size_t(columns_) * rows_) flush();
  }
  void flush() {
    bool full = values_.size() == size_t(columns_) * rows_;
    Insert& s = full ? all_ : one_;
    for (size_t k = 0; k < values_.size(); ++k) {
      s.value(values_[k]);
      if (!full && (k + 1) % size_t(columns_) == 0) s.run();
    }
    if (full) s.run();
    values_.clear();
  }

 private:
  using Value = sqlite_pages::Value;
  Batch& put(const Value& v) {
    values_.push_back(v);
    return *this;
  }
  int columns_;
  size_t rows_;
  Insert one_, all_;
  std::vector<Value> values_;
};

// A large table's rows, written as b-tree pages (sqlite_pages.h) or, on the reference path,
// inserted through SQL (Batch). `rowid_first`: the first column is the table's INTEGER PRIMARY
// KEY, which a record stores as NULL (the rowid holds it); other tables get rowids 1, 2, ...
class BigTable {
 public:
  BigTable(sqlite3* db, const char* table, int columns, size_t batch_rows, sqlite_pages::Writer* pages, bool rowid_first)
      : pages_(pages), rowid_first_(rowid_first) {
    if (pages_) {
      table_ = pages_->add_table(table, rowid_first);
    } else {
      batch_.emplace(db, table, columns, batch_rows);
    }
  }
  BigTable& i(int64_t v) {
    if (!pages_) {
      batch_->i(v);
    } else if (col_++ == 0 && rowid_first_) {
      rowid_ = v;
      record_.null();
    } else {
      record_.integer(v);
    }
    return *this;
  }
  BigTable& u(uint64_t v) { return i(int64_t(v)); }
  BigTable& null() {
    if (!pages_) {
      batch_->null();
    } else {
      record_.null();
    }
    ++col_;
    return *this;
  }
  BigTable& i_or_null(int64_t v, int64_t none) { return v == none ? null() : i(v); }
  BigTable& t(std::string&&) = delete;  // Batch does not copy the text
  BigTable& t(const std::string& v) {
    if (!pages_) {
      batch_->t(v);
    } else {
      record_.text(v.data(), v.size());
    }
    ++col_;
    return *this;
  }
  // A string that outlives the export (Batch keeps the pointer until its flush).
  BigTable& t(const char* v) {
    if (!pages_) {
      batch_->t(v);
    } else {
      record_.text(v, std::strlen(v));
    }
    ++col_;
    return *this;
  }
  void run() {
    if (!pages_) {
      batch_->run();
      return;
    }
    pages_->add_row(table_, rowid_first_ ? rowid_ : ++rowid_, record_);
    record_.clear();
    col_ = 0;
  }
  void flush() {
    if (batch_) batch_->flush();
  }

 private:
  sqlite_pages::Writer* pages_;
  bool rowid_first_;
  int table_ = -1;
  int col_ = 0;
  int64_t rowid_ = 0;
  sqlite_pages::Record record_;
  std::optional<Batch> batch_;
};

std::string hex(uint64_t v) { return fmt::format("0x{:016x}", v); }

// The call an item belongs to: items of one call follow its `call` (timeline.h).
struct CurrentCall {
  int64_t id = 0;
  int64_t api_id = 0;
  int64_t stack_id = 0;  // 0: none
};

class SqliteSink : public TimelineSink {
 public:
  // `pages`: where the large tables' rows go as b-tree pages; nullptr: through SQL.
  SqliteSink(sqlite3* db, const ExportJob& job, sqlite_pages::Writer* pages)
      : db_(db),
        job_(job),
        calls_(db, "calls", 11, 64, pages, true),
        executions_(db, "executions", 13, 64, pages, true),
        allocations_(db, "allocations", 16, 32, pages, false),
        memory_(db, "memory", 7, 32, pages, false),
        syncs_(db, "syncs", 8, 64, pages, true),
        failures_(db, "failures", 11, 32, pages, true),
        symbols_(job.symbol_dirs) {
    ins_process_ = Insert(db, "INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins_step_ = Insert(db, "INSERT INTO steps VALUES (?,?,?)");
    ins_device_ = Insert(db, "INSERT INTO devices VALUES (NULL,?,?,?,?,?,?,?,?)");
    ins_api_ = Insert(db, "INSERT INTO apis VALUES (?,?,?,?)");
    ins_problem_ = Insert(db, "INSERT INTO problems VALUES (?,?,?)");
    set_problem_hash_ = Insert(db, "UPDATE problems SET hash = ? WHERE id = ?");
    ins_stack_ = Insert(db, "INSERT INTO stacks VALUES (?,?,?,?,?,?)");
    ins_frame_ = Insert(db, "INSERT INTO frames VALUES (?,?,?,?,?,?,?,?,?)");
    ins_fault_ = Insert(db, "INSERT INTO faults VALUES (?,?,?,?,?,?,?,?)");
    ins_search_ = Insert(db, "INSERT INTO searches VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins_candidate_ = Insert(db, "INSERT INTO candidates VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  }

  bool wants_calls() const override { return true; }
  const std::string& error() const { return error_; }
  uint64_t rows() const { return rows_; }
  uint64_t processes() const { return processes_; }
  uint64_t events() const { return events_; }

  void begin_process(const ProcessInfo& p) override {
    guard([&] {
      process_id_ = ++processes_;
      info_ = &p;
      const reader::Trace& t = *p.trace;
      api_ids_.assign(t.apis().size(), 0);
      problem_by_ptr_.clear();
      stack_ids_.clear();
      for (const auto& [index, d] : t.devices()) {
        std::string cc = d.cc_major > 0 ? fmt::format("{}.{}", d.cc_major, d.cc_minor) : "";
        ins_device_.i(process_id_).i(d.index).t(d.name).u(d.total_mem).t(d.uuid).t(d.pci_bus_id).t(cc);
        ins_device_.i_or_null(d.multiprocessors, 0).run();
        ++rows_;
      }
      // Every stack of the trace, up front: the calls refer to them by id as they stream past.
      for (const auto& [id, st] : t.stacks()) write_stack(t, id, st);
    });
  }

  void call(const reader::Event& e, const reader::Api& api) override {
    if (!error_.empty()) return;
    try {
      if (e.api >= api_ids_.size()) api_ids_.resize(size_t(e.api) + 1, 0);
      int64_t& api_id = api_ids_[e.api];
      if (api_id == 0) api_id = intern_api(api.name, reader::library_name(api.library), api.flags);
      cur_.id = ++call_id_;
      cur_.api_id = api_id;
      cur_.stack_id = stack_id(e.stack);
      BigTable& s = calls_;
      s.i(cur_.id).i(process_id_).i(e.tid).i(api_id).u(info_->wall_ns(e.ts_ns)).u(e.dur_ns).i(e.device);
      if (e.has_stream)
        s.u(e.stream);
      else
        s.null();
      s.i(e.ret).i_or_null(cur_.stack_id, 0).i((e.sample ? 1 : 0) | (e.injected() ? 2 : 0)).run();
      ++rows_;
      ++events_;
    } catch (const SqlError& x) {
      error_ = x.message;
    } catch (const std::runtime_error& x) {
      error_ = x.what();
    }
  }

  void search(const reader::SearchRecord& r) override {
    guard([&] {
      int64_t id = ++search_id_;
      int64_t winner_id = 0;
      for (size_t k = 0; k < r.candidates.size(); ++k) {
        const reader::SearchCandidate& c = r.candidates[k];
        int64_t cid = ++candidate_id_;
        if (int(k) == r.winner) winner_id = cid;
        ins_candidate_.i(cid).i(id).i(int64_t(k)).u(c.plan).i(c.engine).t(c.knobs).u(c.workspace).i(c.build_status);
        ins_candidate_.i_or_null(c.exec_status, -1).i(c.executions);
        if (c.last_exec_ns)
          ins_candidate_.u(info_->wall_ns(c.last_exec_ns));
        else
          ins_candidate_.null();
        if (c.time_ms >= 0)
          ins_candidate_.d(c.time_ms);
        else
          ins_candidate_.null();
        ins_candidate_.u(c.notes).i(c.injected).i(int(k) == r.winner).run();
        ++rows_;
      }
      const reader::SearchCandidate* w =
          r.winner >= 0 && size_t(r.winner) < r.candidates.size() ? &r.candidates[size_t(r.winner)] : nullptr;
      uint64_t start = info_->wall_ns(r.start_ns), end = info_->wall_ns(std::max(r.end_ns, r.start_ns));
      Insert& s = ins_search_;
      s.i(id)
          .i(process_id_)
          .i(r.tid)
          .i(r.device)
          .t(r.function)
          .t(reader::name_of(r.mode))
          .i_or_null(problem_id(r.problem, r.problem_hash), 0);
      s.u(start).u(end).u(end - start).i_or_null(stack_id(r.stack), 0).i(int64_t(r.candidates.size()));
      s.i_or_null(winner_id, 0);
      if (w)
        s.i(w->engine).t(w->knobs);
      else
        s.null().null();
      s.u(r.search_workspace).i_or_null(r.align, 0).i(r.plans_rejected).i(r.complete).run();
      ++rows_;
    });
  }

  void execution(const ExecutionItem& x) override {
    guard([&] {
      int64_t problem = 0;
      if (!x.problem->empty()) {
        auto [it, fresh] = problem_by_ptr_.try_emplace(x.problem, 0);
        if (fresh) it->second = problem_id(*x.problem, x.problem_hash);
        problem = it->second;
      }
      BigTable& s = executions_;
      s.i(cur_.id).i(process_id_).i(x.tid).u(info_->wall_ns(x.ts_ns)).u(x.dur_ns).i(x.device).i(x.ret).i(x.backend);
      s.i(x.engine).t(*x.knobs).i_or_null(int64_t(x.workspace), 0).i_or_null(problem, 0).i(x.candidate).run();
      ++rows_;
    });
  }

  void sync(const SyncItem& x) override {
    guard([&] {
      syncs_.i(cur_.id).i(process_id_).i(x.tid).i(cur_.api_id).u(info_->wall_ns(x.ts_ns)).u(x.dur_ns);
      syncs_.i(x.device).i(x.ret).run();
      ++rows_;
    });
  }

  void failure(const FailureItem& x) override {
    guard([&] {
      failures_.i(cur_.id).i(process_id_).i(x.tid).i(cur_.api_id).t(x.library).u(info_->wall_ns(x.ts_ns));
      failures_.u(x.dur_ns).i(x.device).i(x.ret).i(x.injected).i_or_null(stack_id(x.stack), 0).run();
      ++rows_;
    });
  }

  void fault(const FaultItem& x) override {
    guard([&] {
      ins_fault_.i(cur_.id).i(process_id_).i(x.tid).i(cur_.api_id).u(info_->wall_ns(x.ts_ns)).i(x.ret).t(*x.rule);
      ins_fault_.u(x.k).run();
      ++rows_;
    });
  }

  void allocation(const AllocationItem& a) override {
    guard([&] {
      int64_t search = a.search_problem ? problem_id(*a.search_problem, 0) : 0;
      BigTable& s = allocations_;
      s.i(cur_.id).i(process_id_).i(a.tid).i(cur_.api_id).u(info_->wall_ns(a.ts_ns)).u(a.dur_ns).i(a.device);
      s.u(a.address).u(a.size).i(a.ok).i(a.ret).i(a.freed);
      if (a.freed)
        s.u(info_->wall_ns(a.alloc_ts_ns));
      else
        s.null();
      s.t(*a.owner).i_or_null(search, 0).i_or_null(stack_id(a.stack), 0).run();
      ++rows_;
    });
  }

  void memory(const MemorySample& m) override {
    guard([&] {
      memory_.i(cur_.id).i(process_id_).u(info_->wall_ns(m.ts_ns)).i(m.device).t(*m.owner).u(m.owner_bytes);
      memory_.u(m.total_bytes).run();
      ++rows_;
    });
  }

  void end_process(const ProcessInfo& p) override {
    guard([&] {
      flush();
      const reader::Trace& t = *p.trace;
      const reader::Process& proc = t.process();
      const analysis::ProcessTimes* times = times_of(job_, p);
      const char* state = reader::sqlite_name_of(t.state());
      Insert& s = ins_process_;
      s.i(process_id_).i(p.pid).i_or_null(proc.ppid, 0).t(p.host).i_or_null(p.rank, -1).i_or_null(proc.local_rank, -1);
      s.i_or_null(proc.world_size, -1).t(times ? times->label : p.label).t(p.command).t(proc.exe).t(t.path()).t(state);
      s.u(t.start_wall_ns());
      if (p.events)
        s.u(p.wall_ns(p.first_ns)).u(p.wall_ns(p.last_ns));
      else
        s.null().null();
      if (times && times->job_start_wall_ns)
        s.u(times->job_start_wall_ns);
      else
        s.null();
      s.u(p.events).i(int64_t(p.tids.size())).run();
      ++rows_;
      if (times) {
        for (size_t k = 0; k < times->step_wall_ns.size(); ++k) {
          ins_step_.i(process_id_).i(int64_t(k)).u(times->step_wall_ns[k]).run();
          ++rows_;
        }
      }
      by_pid_[p.pid].push_back(process_id_);
    });
    info_ = nullptr;
  }

  // After the walk: the analysis's findings, with the processes and problems they concern.
  void write_findings() {
    Insert finding(db_, "INSERT INTO findings VALUES (?,?,?,?,?,?,?,?,?)");
    Insert procs(db_, "INSERT INTO finding_processes VALUES (?,?)");
    Insert sites(db_, "INSERT INTO finding_call_sites VALUES (?,?,?)");
    Insert problems(db_, "INSERT INTO finding_problems VALUES (?,?)");
    int64_t id = 0;
    for (const auto& f : job_.report.findings) {
      ++id;
      std::string evidence = f.evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      finding.i(id).t(f.rule).t(analysis::severity_name(f.severity)).t(f.title).t(f.message).t(evidence).t(f.fix);
      finding.d(f.impact_s).i_or_null(int64_t(f.at_wall_ns), 0).run();
      ++rows_;
      for (uint32_t pid : f.pids) {
        auto it = by_pid_.find(pid);
        if (it == by_pid_.end()) continue;
        for (int64_t process : it->second) {
          procs.i(id).i(process).run();
          ++rows_;
        }
      }
      for (size_t k = 0; k < f.call_sites.size(); ++k) {
        sites.i(id).i(int64_t(k)).t(f.call_sites[k]).run();
        ++rows_;
      }
      for (const auto& text : f.problems) {
        problems.i(id).i(problem_id(text, 0)).run();
        ++rows_;
      }
    }
  }

 private:
  // Before the trace is gone: batched text points into it.
  void flush() {
    for (BigTable* t : {&calls_, &executions_, &allocations_, &memory_, &syncs_, &failures_}) t->flush();
  }

  template <typename Fn>
  void guard(Fn&& fn) {
    if (!error_.empty()) return;
    try {
      fn();
    } catch (const SqlError& x) {
      error_ = x.message;
    } catch (const std::runtime_error& x) {
      error_ = x.what();
    }
  }

  int64_t intern_api(const std::string& name, const char* library, uint64_t flags) {
    auto [it, fresh] = apis_.try_emplace(name, 0);
    if (fresh) {
      it->second = int64_t(apis_.size());
      ins_api_.i(it->second).t(name).t(library).u(flags).run();
      ++rows_;
    }
    return it->second;
  }

  // Problems are shared by the whole job (one id for a layer's problem on every rank), by text;
  // the hash is the trace's where one is known (an item may name the problem before one that
  // carries its hash: the hash is then added).
  int64_t problem_id(const std::string& text, uint64_t hash) {
    if (text.empty()) return 0;
    auto [it, fresh] = problems_.try_emplace(text, ProblemId{});
    ProblemId& p = it->second;
    if (fresh) {
      p.id = int64_t(problems_.size());
      p.hashed = hash != 0;
      std::string hash_text = hash ? hex(hash) : "";
      ins_problem_.i(p.id);
      if (hash)
        ins_problem_.t(hash_text);
      else
        ins_problem_.null();
      ins_problem_.t(text).run();
      ++rows_;
    } else if (!p.hashed && hash != 0) {
      p.hashed = true;
      std::string hash_text = hex(hash);
      set_problem_hash_.t(hash_text).i(p.id).run();
    }
    return p.id;
  }

  int64_t stack_id(uint32_t trace_stack) const {
    if (trace_stack == 0) return 0;
    auto it = stack_ids_.find(trace_stack);
    return it == stack_ids_.end() ? 0 : it->second;
  }

  // A stack with its frames symbolized offline; `site` is how the analysis's findings cite it
  // (the application's innermost Python line, then the two innermost native frames).
  void write_stack(const reader::Trace& t, uint32_t trace_id, const reader::Stack& st) {
    int64_t id = ++stack_id_;
    stack_ids_[trace_id] = id;
    std::vector<std::string> parts = symbols_.describe(t, reader::StackId(trace_id), 1, 2);
    std::string site;
    for (const auto& part : parts) site += (site.empty() ? "" : " < ") + part;
    ins_stack_.i(id).i(process_id_).i(trace_id).t(site).i(int64_t(st.python.size())).i(int64_t(st.pcs.size())).run();
    ++rows_;
    int64_t depth = 0;
    for (const auto& f : st.python) {
      std::string text = reader::Symbolizer::text(f);
      ins_frame_.i(id).i(depth++).t("python").null().null().t(f.function).t(f.file).i(f.line).t(text).run();
      ++rows_;
    }
    for (size_t k = 0; k < st.pcs.size(); ++k) {
      ins_frame_.i(id).i(depth++).t("native").u(st.pcs[k]);
      if (k < st.resolved.size() && !st.resolved[k].empty()) {
        ins_frame_.null().null().null().null().t(st.resolved[k]).run();
      } else {
        reader::Symbol sym = symbols_.resolve(t, st.pcs[k]);
        std::string text = reader::Symbolizer::text(sym);
        if (sym.module.empty())
          ins_frame_.null();
        else
          ins_frame_.t(sym.module);
        if (sym.function.empty())
          ins_frame_.null();
        else
          ins_frame_.t(sym.function);
        if (sym.file.empty())
          ins_frame_.null().null();
        else
          ins_frame_.t(sym.file).i(sym.line);
        ins_frame_.t(text).run();
      }
      ++rows_;
    }
  }

  sqlite3* db_;
  const ExportJob& job_;
  std::string error_;
  uint64_t rows_ = 0, processes_ = 0, events_ = 0;
  Insert ins_process_, ins_step_, set_problem_hash_, ins_device_, ins_api_, ins_problem_, ins_stack_, ins_frame_,
      ins_fault_, ins_search_, ins_candidate_;
  BigTable calls_, executions_, allocations_, memory_, syncs_, failures_;
  reader::Symbolizer symbols_;
  // The process being walked.
  const ProcessInfo* info_ = nullptr;
  int64_t process_id_ = 0;
  CurrentCall cur_;
  std::vector<int64_t> api_ids_;                                    // the trace's API id -> apis.id
  std::unordered_map<uint32_t, int64_t> stack_ids_;                 // the trace's stack id -> stacks.id
  std::unordered_map<const std::string*, int64_t> problem_by_ptr_;  // the trace's problem text -> problems.id
  // The whole job.
  std::unordered_map<std::string, int64_t> apis_;
  struct ProblemId {
    int64_t id = 0;
    bool hashed = false;
  };
  std::unordered_map<std::string, ProblemId> problems_;
  std::unordered_map<uint32_t, std::vector<int64_t>> by_pid_;
  int64_t call_id_ = 0, search_id_ = 0, candidate_id_ = 0, stack_id_ = 0;
};

void write_meta(sqlite3* db, const ExportJob& job) {
  Insert meta(db, "INSERT INTO meta VALUES (?,?)");
  auto now = std::chrono::system_clock::now();
  uint64_t now_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char iso[32];
  std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string sources = nlohmann::json(job.paths).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string summary = job.report.summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::pair<std::string, std::string> rows[] = {
      {"cuprobe_version", CUPROBE_VERSION},
      {"schema_version", std::to_string(kSchemaVersion)},
      {"trace_format", std::to_string(trace::kVersion)},
      {"exported_at", iso},
      {"exported_at_ns", std::to_string(now_ns)},
      {"sources", sources},
      {"time_unit", "ns of the traced machines' wall clock (Unix epoch); durations in ns"},
      {"summary", summary},
  };
  for (const auto& [k, v] : rows) meta.t(k).t(v).run();
}

// The tables whose rows are written as pages (sqlite_pages.h) unless rows go through SQL.
bool is_large(const std::string& table) {
  for (const char* t : {"calls", "executions", "allocations", "memory", "syncs", "failures"}) {
    if (table == t) return true;
  }
  return false;
}

// The names of the other tables, in schema order.
std::vector<std::string> small_tables() {
  std::vector<std::string> out;
  std::string schema = kSchema;
  const std::string create = "CREATE TABLE ";
  for (size_t at = schema.find(create); at != std::string::npos; at = schema.find(create, at + 1)) {
    size_t name = at + create.size();
    std::string table = schema.substr(name, schema.find_first_of(" (", name) - name);
    if (!is_large(table)) out.push_back(table);
  }
  return out;
}

// The small tables' definitions as temporary tables.
std::string temporary_schema() {
  std::string out, schema = kSchema;
  for (size_t at = 0; at < schema.size();) {
    size_t end = schema.find(';', at);
    if (end == std::string::npos) break;
    std::string stmt = schema.substr(at, end + 1 - at);
    at = end + 1;
    size_t create = stmt.find("CREATE TABLE ");
    if (create == std::string::npos) continue;
    size_t name = create + 13;
    if (is_large(stmt.substr(name, stmt.find_first_of(" (", name) - name))) continue;
    out += stmt.replace(create, 13, "CREATE TEMP TABLE ");
  }
  return out;
}

// Rows too large for a leaf page (no overflow pages are written): through SQL.
void insert_pending(sqlite3* db, const sqlite_pages::Writer& pages) {
  std::map<int, Insert> inserts;
  for (const auto& row : pages.pending()) {
    std::vector<sqlite_pages::Value> values = sqlite_pages::decode(row.record);
    auto it = inserts.find(row.table);
    if (it == inserts.end()) {
      std::string sql = fmt::format("INSERT INTO main.{} VALUES (?", pages.table_name(row.table));
      for (size_t c = 1; c < values.size(); ++c) sql += ",?";
      it = inserts.emplace(row.table, Insert(db, (sql + ")").c_str())).first;
    }
    Insert& ins = it->second;
    // A table without an INTEGER PRIMARY KEY gives such a row the next rowid instead.
    bool rowid_first = pages.rowid_first(row.table);
    for (size_t c = 0; c < values.size(); ++c) {
      if (c == 0 && rowid_first)
        ins.i(row.rowid);
      else
        ins.value(values[c]);
    }
    ins.run();
  }
}

}  // namespace

Result<ExportStats> export_sqlite(const ExportJob& job, const std::string& out_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // An earlier, interrupted export may have left a file here: a database is never appended to.
  fs::remove(out_path, ec);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(out_path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close_v2);
  // SQLite's messages are generic ("unable to open database file"); the system's says why.
  auto why = [&](const std::string& sqlite_message) {
    int err = raw ? sqlite3_system_errno(raw) : 0;
    return err ? fmt::format("{} ({})", std::strerror(err), sqlite_message) : sqlite_message;
  };
  if (rc != SQLITE_OK) {
    return Error{fmt::format("cannot create {}: {}", out_path, why(raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)))};
  }
  const char* rows_env = std::getenv("CUPROBE_SQLITE_ROWS");
  bool through_sql = job.sqlite_rows_through_sql || (rows_env && std::strcmp(rows_env, "sql") == 0);
  // Nothing to roll back to: a failed export is removed, so neither a journal nor syncs are worth
  // their cost. The page cache is bounded (64 MiB); pages beyond it go to the file. Where the
  // large tables' pages are written directly, SQLite must notice the file changed under it (it
  // does, by the header's change counter, only when it does not hold the file exclusively), and
  // its temporary tables live in a file.
  std::string pragmas = fmt::format(
      "PRAGMA page_size={}; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536; {}",
      job.sqlite_page_size,
      through_sql ? "PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=MEMORY;" : "PRAGMA temp_store=FILE;");
  try {
    exec(db.get(), pragmas.c_str());
    exec(db.get(), "BEGIN");
    exec(db.get(), kSchema);
    if (!through_sql) exec(db.get(), "COMMIT");
  } catch (const SqlError& x) {
    // SQLite opens the file lazily: a path it cannot create shows here, at its first write.
    return Error{fmt::format("cannot create {}: {}", out_path, why(x.message))};
  }
  ExportStats stats;
  try {
    std::unique_ptr<sqlite_pages::Writer> pages;
    if (!through_sql) {
      pages = std::make_unique<sqlite_pages::Writer>(out_path, job.sqlite_page_size);
      // The small tables go to temporary tables of the same names (which hide the main ones)
      // until the pages are written.
      exec(db.get(), "PRAGMA temp.cache_size=-16384");
      exec(db.get(), temporary_schema().c_str());
      exec(db.get(), "BEGIN");
    }
    write_meta(db.get(), job);
    std::vector<std::pair<std::string, uint32_t>> roots;
    {
      // Every statement of the walk is finalized at the end of this block.
      SqliteSink sink(db.get(), job, pages.get());
      auto walked = walk_job(job.paths, sink, job.walk);
      if (!walked) return walked.error();
      if (!sink.error().empty()) return Error{fmt::format("cannot write {}: {}", out_path, sink.error())};
      sink.write_findings();
      Insert warning(db.get(), "INSERT INTO warnings VALUES (NULL,?)");
      for (const auto& w : job.report.warnings) warning.t(w).run();
      if (job.walk.warnings) {
        for (const auto& w : *job.walk.warnings) warning.t(w).run();
      }
      stats.processes = sink.processes();
      stats.events = sink.events();
      stats.items = sink.rows();
      Insert q(db.get(), "SELECT name, rootpage FROM main.sqlite_schema WHERE type = 'table'");
      while (sqlite3_step(q.stmt()) == SQLITE_ROW) {
        roots.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(q.stmt(), 0)),
                           uint32_t(sqlite3_column_int64(q.stmt(), 1)));
      }
    }
    if (pages) {
      exec(db.get(), "COMMIT");
      pages->finish(roots);
      exec(db.get(), "BEGIN");
      std::string copy;
      for (const std::string& table : small_tables()) {
        copy += fmt::format("INSERT INTO main.{0} SELECT * FROM temp.{0}; DROP TABLE temp.{0};", table);
      }
      exec(db.get(), copy.c_str());
      insert_pending(db.get(), *pages);
    }
    exec(db.get(), kIndexes);
    exec(db.get(), "COMMIT");
  } catch (const SqlError& x) {
    return Error{fmt::format("cannot write {}: {}", out_path, x.message)};
  } catch (const std::runtime_error& x) {
    return Error{fmt::format("cannot write {}: {}", out_path, x.what())};
  }
  db.reset();
  stats.bytes = fs::file_size(out_path, ec);
  return stats;
}

}  // namespace cuprobe::exporter
