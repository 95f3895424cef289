// `cuprobe export --format sqlite`: a job's timeline as a SQLite database (schema and example
// queries: docs/sql.md).
//
// Rows are inserted as walk_job hands items over, in one transaction with every statement
// prepared once, so that memory stays at what the walk itself holds plus the interned ids (APIs,
// problems, stacks): a recording of any length exports in bounded memory. Rows are kept narrow
// (integers; text only where a row is rare or the text is what a query wants, such as knobs), the
// largest tables are inserted many rows to a statement, and the indexes are built once after the
// last insert rather than kept up to date row by row. Every time is wall-clock (Unix epoch)
// nanoseconds, so that the processes of a job, and a PyTorch profiler trace of the same run, line
// up. The tables, their columns and the rows' fields are declared once, in sqlite_schema.h.
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
#include "export/sqlite_schema.h"
#include "trace/reader.h"
#include "trace/symbolize.h"

#include "version.h"

namespace cuprobe::exporter {

namespace {

// Bumped whenever a table or column changes meaning, is renamed or removed (docs/sql.md).
constexpr int kSchemaVersion = 1;

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

using sqlite_schema::Cell;
using sqlite_schema::Table;
namespace rows = sqlite_schema::rows;

template <typename Row>
constexpr const Table& table_of() {
  return sqlite_schema::table(Row::kTable);
}

// One prepared statement, bound column by column (1-based, in the order of its placeholders)
// and run; reused for every row.
class Insert {
 public:
  Insert() = default;
  Insert(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
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
  Insert& null() {
    sqlite3_bind_null(stmt_, ++col_);
    return *this;
  }
  Insert& d(double v) {
    sqlite3_bind_double(stmt_, ++col_, v);
    return *this;
  }
  // The text must live until run(): it is not copied.
  Insert& t(const char* v, int n) {
    sqlite3_bind_text(stmt_, ++col_, v, n, SQLITE_STATIC);
    return *this;
  }
  // A column of `table`'s row; one the code filling the row left unset fails the export.
  Insert& cell(const Cell& c, const Table& table, size_t column) {
    switch (c.kind) {
      case Cell::kInt:
        return i(c.i);
      case Cell::kNull:
        return null();
      case Cell::kReal:
        return d(c.d);
      case Cell::kText:
        return t(c.s, int(c.size));
      case Cell::kUnset:
        break;
    }
    throw SqlError{fmt::format("{}.{} was not given a value", table.name, table.columns[column % table.count].name)};
  }
  // A value decoded from a record (sqlite_pages::decode).
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

// An INSERT of one row of a declared table (sqlite_schema.h), run at once.
template <typename Row>
class RowInsert {
 public:
  RowInsert() = default;
  explicit RowInsert(sqlite3* db) : ins_(db, sqlite_schema::insert_statement(table_of<Row>())) {}
  void add(const Row& row) {
    size_t column = 0;
    row.each([&](const Cell& c) { ins_.cell(c, table_of<Row>(), column++); });
    ins_.run();
  }

 private:
  Insert ins_;
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
template <typename Row>
class Batch {
 public:
  Batch(sqlite3* db, size_t rows)
      : rows_(rows),
        one_(db, sqlite_schema::insert_statement(table_of<Row>())),
        all_(db, sqlite_schema::insert_statement(table_of<Row>(), rows)) {
    cells_.reserve(table_of<Row>().count * rows);
  }
  void add(const Row& row) {
    row.each([&](const Cell& c) { cells_.push_back(c); });
    if (cells_.size() == table_of<Row>().count * rows_) flush();
  }
  void flush() {
    size_t columns = table_of<Row>().count;
    bool full = cells_.size() == columns * rows_;
    Insert& s = full ? all_ : one_;
    for (size_t k = 0; k < cells_.size(); ++k) {
      s.cell(cells_[k], table_of<Row>(), k);
      if (!full && (k + 1) % columns == 0) s.run();
    }
    if (full) s.run();
    cells_.clear();
  }

 private:
  size_t rows_;
  Insert one_, all_;
  std::vector<Cell> cells_;
};

// A large table's rows, written as b-tree pages (sqlite_pages.h) or, on the reference path,
// inserted through SQL (Batch). A table whose first column is its INTEGER PRIMARY KEY stores it
// as NULL in the record (the rowid holds it); other tables get rowids 1, 2, ...
template <typename Row>
class BigTable {
 public:
  BigTable(sqlite3* db, size_t batch_rows, sqlite_pages::Writer* pages) : pages_(pages) {
    if (pages_) {
      table_ = pages_->add_table(table_of<Row>().name, table_of<Row>().rowid_first());
    } else {
      batch_.emplace(db, batch_rows);
    }
  }
  void add(const Row& row) {
    if (!pages_) {
      batch_->add(row);
      return;
    }
    constexpr bool kRowidFirst = table_of<Row>().rowid_first();
    size_t column = 0;
    row.each([&](const Cell& c) {
      if (column++ == 0 && kRowidFirst && c.kind != Cell::kUnset) {
        if (c.kind != Cell::kInt) throw SqlError{fmt::format("{}: a key that is not an integer", table_of<Row>().name)};
        rowid_ = c.i;
        record_.null();
        return;
      }
      switch (c.kind) {
        case Cell::kInt:
          return record_.integer(c.i);
        case Cell::kNull:
          return record_.null();
        case Cell::kReal:
          return record_.real(c.d);
        case Cell::kText:
          return record_.text(c.s, c.size);
        case Cell::kUnset:
          break;
      }
      throw SqlError{fmt::format("{}.{} was not given a value", table_of<Row>().name,
                                 table_of<Row>().columns[column - 1].name)};
    });
    pages_->add_row(table_, kRowidFirst ? rowid_ : ++rowid_, record_);
    record_.clear();
  }
  void flush() {
    if (batch_) batch_->flush();
  }

 private:
  sqlite_pages::Writer* pages_;
  int table_ = -1;
  int64_t rowid_ = 0;
  sqlite_pages::Record record_;
  std::optional<Batch<Row>> batch_;
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
        ins_process_(db),
        ins_step_(db),
        ins_device_(db),
        ins_api_(db),
        ins_problem_(db),
        ins_stack_(db),
        ins_frame_(db),
        ins_fault_(db),
        ins_search_(db),
        ins_candidate_(db),
        set_problem_hash_(db, "UPDATE problems SET hash = ? WHERE id = ?"),
        calls_(db, 64, pages),
        executions_(db, 64, pages),
        allocations_(db, 32, pages),
        memory_(db, 32, pages),
        syncs_(db, 64, pages),
        failures_(db, 32, pages),
        symbols_(job.symbol_dirs) {}

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
        ins_device_.add({.id = Cell::null(), .process_id = process_id_, .device = d.index, .name = d.name,
                         .total_mem = d.total_mem, .uuid = d.uuid, .pci_bus_id = d.pci_bus_id, .cc = cc,
                         .multiprocessors = Cell::or_null(d.multiprocessors, 0)});
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
      calls_.add({.id = cur_.id, .process_id = process_id_, .tid = e.tid, .api_id = api_id,
                  .ts_ns = info_->wall_ns(e.ts_ns), .dur_ns = e.dur_ns, .device = e.device,
                  .stream = e.has_stream ? Cell(e.stream) : Cell::null(), .ret = e.ret,
                  .stack_id = Cell::or_null(cur_.stack_id, 0),
                  .flags = (e.sample ? 1 : 0) | (e.injected() ? 2 : 0)});
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
        ins_candidate_.add({.id = cid, .search_id = id, .idx = k, .plan = c.plan, .engine = c.engine,
                            .knobs = c.knobs, .workspace = c.workspace, .build_status = c.build_status,
                            .exec_status = Cell::or_null(c.exec_status, -1), .executions = c.executions,
                            .last_exec_ns = c.last_exec_ns ? Cell(info_->wall_ns(c.last_exec_ns)) : Cell::null(),
                            .time_ms = c.time_ms >= 0 ? Cell(c.time_ms) : Cell::null(), .notes = c.notes,
                            .injected = c.injected, .winner = int(k) == r.winner});
        ++rows_;
      }
      const reader::SearchCandidate* w =
          r.winner >= 0 && size_t(r.winner) < r.candidates.size() ? &r.candidates[size_t(r.winner)] : nullptr;
      uint64_t start = info_->wall_ns(r.start_ns), end = info_->wall_ns(std::max(r.end_ns, r.start_ns));
      ins_search_.add({.id = id,
                       .process_id = process_id_,
                       .tid = r.tid,
                       .device = r.device,
                       .api = r.function,
                       .mode = reader::name_of(r.mode),
                       .problem_id = Cell::or_null(problem_id(r.problem, r.problem_hash), 0),
                       .start_ns = start,
                       .end_ns = end,
                       .dur_ns = end - start,
                       .stack_id = Cell::or_null(stack_id(r.stack), 0),
                       .candidates = r.candidates.size(),
                       .winner_id = Cell::or_null(winner_id, 0),
                       .winner_engine = w ? Cell(w->engine) : Cell::null(),
                       .winner_knobs = w ? Cell(w->knobs) : Cell::null(),
                       .search_workspace = r.search_workspace,
                       .probe_bytes = r.probe_bytes,
                       .align = Cell::or_null(r.align, 0),
                       .plans_rejected = r.plans_rejected,
                       .complete = r.complete,
                       .steered = r.was_steered() ? Cell(reader::name_of(r.steered)) : Cell::null()});
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
      executions_.add({.call_id = cur_.id, .process_id = process_id_, .tid = x.tid, .ts_ns = info_->wall_ns(x.ts_ns),
                       .dur_ns = x.dur_ns, .device = x.device, .ret = x.ret, .backend = x.backend,
                       .engine = x.engine, .knobs = *x.knobs, .workspace = Cell::or_null(int64_t(x.workspace), 0),
                       .problem_id = Cell::or_null(problem, 0), .candidate = x.candidate});
      ++rows_;
    });
  }

  void sync(const SyncItem& x) override {
    guard([&] {
      syncs_.add({.call_id = cur_.id, .process_id = process_id_, .tid = x.tid, .api_id = cur_.api_id,
                  .ts_ns = info_->wall_ns(x.ts_ns), .dur_ns = x.dur_ns, .device = x.device, .ret = x.ret});
      ++rows_;
    });
  }

  void failure(const FailureItem& x) override {
    guard([&] {
      failures_.add({.call_id = cur_.id, .process_id = process_id_, .tid = x.tid, .api_id = cur_.api_id,
                     .library = x.library, .ts_ns = info_->wall_ns(x.ts_ns), .dur_ns = x.dur_ns, .device = x.device,
                     .ret = x.ret, .injected = x.injected, .stack_id = Cell::or_null(stack_id(x.stack), 0)});
      ++rows_;
    });
  }

  void fault(const FaultItem& x) override {
    guard([&] {
      ins_fault_.add({.call_id = cur_.id, .process_id = process_id_, .tid = x.tid, .api_id = cur_.api_id,
                      .ts_ns = info_->wall_ns(x.ts_ns), .ret = x.ret, .rule = *x.rule, .k = x.k});
      ++rows_;
    });
  }

  void allocation(const AllocationItem& a) override {
    guard([&] {
      int64_t search = a.search_problem ? problem_id(*a.search_problem, 0) : 0;
      allocations_.add({.call_id = cur_.id, .process_id = process_id_, .tid = a.tid, .api_id = cur_.api_id,
                        .ts_ns = info_->wall_ns(a.ts_ns), .dur_ns = a.dur_ns, .device = a.device,
                        .address = a.address, .size = a.size, .ok = a.ok, .ret = a.ret, .freed = a.freed,
                        .alloc_ts_ns = a.freed ? Cell(info_->wall_ns(a.alloc_ts_ns)) : Cell::null(),
                        .owner = *a.owner, .search_problem_id = Cell::or_null(search, 0),
                        .stack_id = Cell::or_null(stack_id(a.stack), 0)});
      ++rows_;
    });
  }

  void memory(const MemorySample& m) override {
    guard([&] {
      memory_.add({.call_id = cur_.id, .process_id = process_id_, .ts_ns = info_->wall_ns(m.ts_ns),
                   .device = m.device, .owner = *m.owner, .owner_bytes = m.owner_bytes,
                   .total_bytes = m.total_bytes});
      ++rows_;
    });
  }

  void end_process(const ProcessInfo& p) override {
    guard([&] {
      flush();
      const reader::Trace& t = *p.trace;
      const reader::Process& proc = t.process();
      const analysis::ProcessTimes* times = times_of(job_, p);
      ins_process_.add(
          {.id = process_id_, .pid = p.pid, .ppid = Cell::or_null(proc.ppid, 0), .host = p.host,
           .rank = Cell::or_null(p.rank, -1), .local_rank = Cell::or_null(proc.local_rank, -1),
           .world_size = Cell::or_null(proc.world_size, -1), .label = times ? times->label : p.label,
           .command = p.command, .exe = proc.exe, .trace_path = t.path(),
           .trace_state = reader::sqlite_name_of(t.state()), .start_ns = t.start_wall_ns(),
           .first_ns = p.events ? Cell(p.wall_ns(p.first_ns)) : Cell::null(),
           .last_ns = p.events ? Cell(p.wall_ns(p.last_ns)) : Cell::null(),
           .job_start_ns = times && times->job_start_wall_ns ? Cell(times->job_start_wall_ns) : Cell::null(),
           .events = p.events, .threads = p.tids.size()});
      ++rows_;
      if (times) {
        for (size_t k = 0; k < times->step_wall_ns.size(); ++k) {
          ins_step_.add({.process_id = process_id_, .step = k, .start_ns = times->step_wall_ns[k]});
          ++rows_;
        }
      }
      by_pid_[p.pid].push_back(process_id_);
    });
    info_ = nullptr;
  }

  // After the walk: the analysis's findings, with the processes and problems they concern.
  void write_findings() {
    RowInsert<rows::findings> finding(db_);
    RowInsert<rows::finding_processes> procs(db_);
    RowInsert<rows::finding_call_sites> sites(db_);
    RowInsert<rows::finding_problems> problems(db_);
    int64_t id = 0;
    for (const auto& f : job_.report.findings) {
      ++id;
      std::string evidence = f.evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      finding.add({.id = id, .rule = f.rule, .severity = analysis::severity_name(f.severity), .title = f.title,
                   .message = f.message, .evidence = evidence, .fix = f.fix, .impact_s = f.impact_s,
                   .at_ns = Cell::or_null(int64_t(f.at_wall_ns), 0)});
      ++rows_;
      for (uint32_t pid : f.pids) {
        auto it = by_pid_.find(pid);
        if (it == by_pid_.end()) continue;
        for (int64_t process : it->second) {
          procs.add({.finding_id = id, .process_id = process});
          ++rows_;
        }
      }
      for (size_t k = 0; k < f.call_sites.size(); ++k) {
        sites.add({.finding_id = id, .idx = k, .site = f.call_sites[k]});
        ++rows_;
      }
      for (const auto& text : f.problems) {
        problems.add({.finding_id = id, .problem_id = problem_id(text, 0)});
        ++rows_;
      }
    }
  }

 private:
  // Before the trace is gone: batched text points into it.
  void flush() {
    calls_.flush();
    executions_.flush();
    allocations_.flush();
    memory_.flush();
    syncs_.flush();
    failures_.flush();
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
      ins_api_.add({.id = it->second, .name = name, .library = library, .flags = flags});
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
      ins_problem_.add({.id = p.id, .hash = hash ? Cell(hash_text) : Cell::null(), .text = text});
      ++rows_;
    } else if (!p.hashed && hash != 0) {
      p.hashed = true;
      std::string hash_text = hex(hash);
      set_problem_hash_.t(hash_text.data(), int(hash_text.size())).i(p.id).run();
    }
    return p.id;
  }

  int64_t stack_id(uint32_t trace_stack) const {
    if (trace_stack == 0) return 0;
    auto it = stack_ids_.find(trace_stack);
    return it == stack_ids_.end() ? 0 : it->second;
  }

  // Text, or NULL where it is empty (unknown).
  static Cell text_or_null(const std::string& s) { return s.empty() ? Cell::null() : Cell(s); }

  // A stack with its frames symbolized offline; `site` is how the analysis's findings cite it
  // (the application's innermost Python line, then the two innermost native frames).
  void write_stack(const reader::Trace& t, uint32_t trace_id, const reader::Stack& st) {
    int64_t id = ++stack_id_;
    stack_ids_[trace_id] = id;
    std::vector<std::string> parts = symbols_.describe(t, reader::StackId(trace_id), 1, 2);
    std::string site;
    for (const auto& part : parts) site += (site.empty() ? "" : " < ") + part;
    ins_stack_.add({.id = id, .process_id = process_id_, .trace_stack = trace_id, .site = site,
                    .python_frames = st.python.size(), .native_frames = st.pcs.size()});
    ++rows_;
    int64_t depth = 0;
    for (const auto& f : st.python) {
      std::string text = reader::Symbolizer::text(f);
      ins_frame_.add({.stack_id = id, .depth = depth++, .kind = "python", .pc = Cell::null(), .module = Cell::null(),
                      .function = f.function, .file = f.file, .line = f.line, .text = text});
      ++rows_;
    }
    for (size_t k = 0; k < st.pcs.size(); ++k) {
      rows::frames frame{.stack_id = id, .depth = depth++, .kind = "native", .pc = st.pcs[k]};
      if (k < st.resolved.size() && !st.resolved[k].empty()) {
        frame.module = frame.function = frame.file = frame.line = Cell::null();
        frame.text = st.resolved[k];
        ins_frame_.add(frame);
      } else {
        reader::Symbol sym = symbols_.resolve(t, st.pcs[k]);
        std::string text = reader::Symbolizer::text(sym);
        frame.module = text_or_null(sym.module);
        frame.function = text_or_null(sym.function);
        frame.file = text_or_null(sym.file);
        frame.line = sym.file.empty() ? Cell::null() : Cell(sym.line);
        frame.text = text;
        ins_frame_.add(frame);
      }
      ++rows_;
    }
  }

  sqlite3* db_;
  const ExportJob& job_;
  std::string error_;
  uint64_t rows_ = 0, processes_ = 0, events_ = 0;
  RowInsert<rows::processes> ins_process_;
  RowInsert<rows::steps> ins_step_;
  RowInsert<rows::devices> ins_device_;
  RowInsert<rows::apis> ins_api_;
  RowInsert<rows::problems> ins_problem_;
  RowInsert<rows::stacks> ins_stack_;
  RowInsert<rows::frames> ins_frame_;
  RowInsert<rows::faults> ins_fault_;
  RowInsert<rows::searches> ins_search_;
  RowInsert<rows::candidates> ins_candidate_;
  Insert set_problem_hash_;
  BigTable<rows::calls> calls_;
  BigTable<rows::executions> executions_;
  BigTable<rows::allocations> allocations_;
  BigTable<rows::memory> memory_;
  BigTable<rows::syncs> syncs_;
  BigTable<rows::failures> failures_;
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
  RowInsert<rows::meta> meta(db);
  auto now = std::chrono::system_clock::now();
  uint64_t now_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char iso[32];
  std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string sources = nlohmann::json(job.paths).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string summary = job.report.summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::pair<std::string, std::string> entries[] = {
      {"cuprobe_version", CUPROBE_VERSION},
      {"schema_version", std::to_string(kSchemaVersion)},
      {"trace_format", std::to_string(trace::kVersion)},
      {"exported_at", iso},
      {"exported_at_ns", std::to_string(now_ns)},
      {"sources", sources},
      {"time_unit", "ns of the traced machines' wall clock (Unix epoch); durations in ns"},
      {"summary", summary},
  };
  for (const auto& [k, v] : entries) meta.add({.key = k, .value = v});
}

// Rows too large for a leaf page (no overflow pages are written): through SQL.
void insert_pending(sqlite3* db, const sqlite_pages::Writer& pages) {
  std::map<int, Insert> inserts;
  for (const auto& row : pages.pending()) {
    std::vector<sqlite_pages::Value> values = sqlite_pages::decode(row.record);
    auto it = inserts.find(row.table);
    if (it == inserts.end()) {
      const Table* table = sqlite_schema::table_named(pages.table_name(row.table));
      if (!table) throw SqlError{"no table " + pages.table_name(row.table)};
      it = inserts.emplace(row.table, Insert(db, sqlite_schema::insert_statement(*table, 1, "main."))).first;
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
    exec(db.get(), sqlite_schema::create_statements().c_str());
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
      exec(db.get(), sqlite_schema::create_statements(true).c_str());
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
      RowInsert<rows::warnings> warning(db.get());
      for (const auto& w : job.report.warnings) warning.add({.id = Cell::null(), .text = w});
      if (job.walk.warnings) {
        for (const auto& w : *job.walk.warnings) warning.add({.id = Cell::null(), .text = w});
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
      for (const Table& table : sqlite_schema::kTables) {
        if (table.large) continue;
        copy += fmt::format("INSERT INTO main.{0} SELECT * FROM temp.{0}; DROP TABLE temp.{0};", table.name);
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
