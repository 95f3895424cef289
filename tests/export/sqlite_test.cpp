// `cuprobe export --format sqlite` (docs/sql.md) as users run it: the database of a recorded
// search storm, of rule fixtures (out of memory, two ranks that chose different plans) and of a
// run under fault mode holds what `cuprobe dump` and `cuprobe analyze --json` say of the same
// input; every query docs/sql.md shows runs and answers; a file that cannot be created is named
// with the reason. The database's tables and columns, and docs/sql.md's, are the ones
// export/sqlite_schema.h declares.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <thread>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cuprobe/trace_format.h"
#include "export/export.h"
#include "export/sqlite_schema.h"
#include "trace/reader.h"
#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kRules = CUPROBE_TEST_RULES_DIR;
const std::string kFixtures = kRules + "/fixtures";

// A database opened read-only; a statement that fails fails the test.
class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
    }
  }
  ~Db() { sqlite3_close_v2(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Every row, each column as text ("NULL" for NULL).
  std::vector<std::vector<std::string>> rows(const std::string& sql, std::string* error = nullptr) const {
    std::vector<std::vector<std::string>> out;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      std::string m = sqlite3_errmsg(db_);
      if (error)
        *error = m;
      else
        ADD_FAILURE() << sql << ": " << m;
      return out;
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* t = sqlite3_column_text(s, c);
        row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      out.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) {
      std::string m = sqlite3_errmsg(db_);
      if (error)
        *error = m;
      else
        ADD_FAILURE() << sql << ": " << m;
    }
    sqlite3_finalize(s);
    return out;
  }
  int64_t count(const std::string& sql) const {
    auto r = rows(sql);
    if (r.empty() || r[0].empty() || r[0][0] == "NULL") return -1;
    return std::stoll(r[0][0]);
  }
  std::string text(const std::string& sql) const {
    auto r = rows(sql);
    return r.empty() || r[0].empty() ? "" : r[0][0];
  }

 private:
  sqlite3* db_ = nullptr;
};

// `cuprobe export --format sqlite` of `paths` into a fresh directory; the database's path.
std::string export_db(const std::vector<std::string>& paths, const std::string& tag) {
  std::string out = fresh_dir(tag) + "/run.sqlite";
  std::vector<std::string> cmd = {cuprobe_bin(), "export", "--format", "sqlite", "-q", "-o", out};
  cmd.insert(cmd.end(), paths.begin(), paths.end());
  RunResult r = run(cmd);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + out), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(fs::path(out).parent_path())) {
    EXPECT_NE(e.path().extension(), ".part") << "a partial file was left: " << e.path();
  }
  return out;
}

std::vector<json> dump_all(const std::vector<std::string>& paths, const std::vector<std::string>& opts = {}) {
  std::vector<json> all;
  for (const auto& p : paths) {
    auto lines = dump(p, opts);
    all.insert(all.end(), lines.begin(), lines.end());
  }
  return all;
}

size_t lines_of(const std::vector<json>& lines, const std::string& type) {
  size_t n = 0;
  for (const auto& l : lines) n += l.value("type", "") == type;
  return n;
}

// What every export must agree on with dump and analyze: calls, searches and their candidates,
// failed calls, bytes allocated, findings (rule ids in the report's order, with their processes),
// processes with their ranks.
void expect_matches(const std::string& db_path, const std::vector<std::string>& paths) {
  Db db(db_path);
  std::vector<json> lines = dump_all(paths);
  std::vector<json> searches = dump_all(paths, {"--searches"});
  json report = analyze_json(paths);
  const json& summary = report["summary"];

  EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.text("SELECT value FROM meta WHERE key = 'schema_version'"), "1");
  EXPECT_EQ(db.count("SELECT count(*) FROM calls"), int64_t(lines_of(lines, "call")));
  EXPECT_EQ(db.count("SELECT sum(events) FROM processes"), int64_t(lines_of(lines, "call")));
  EXPECT_EQ(db.count("SELECT count(*) FROM calls"), summary["events"].get<int64_t>());
  EXPECT_EQ(db.count("SELECT count(*) FROM calls WHERE flags & 1"), int64_t(of_type(lines, "sample").size()));

  // Searches, candidates and winners, by problem.
  size_t candidates = 0, winners = 0;
  std::map<std::string, int> by_problem;
  for (const auto& s : searches) {
    if (s.value("type", "") != "search") continue;
    candidates += s["candidates"].size();
    winners += s["winner"].get<int>() >= 0;
    ++by_problem[s["problem"].get<std::string>()];
  }
  EXPECT_EQ(db.count("SELECT count(*) FROM searches"), int64_t(lines_of(searches, "search")));
  EXPECT_EQ(db.count("SELECT count(*) FROM searches"), summary["searches"].get<int64_t>());
  EXPECT_EQ(db.count("SELECT count(*) FROM candidates"), int64_t(candidates));
  EXPECT_EQ(db.count("SELECT count(*) FROM searches WHERE winner_id IS NOT NULL"), int64_t(winners));
  EXPECT_EQ(db.count("SELECT count(*) FROM candidates WHERE winner = 1"), int64_t(winners));
  std::map<std::string, int> db_by_problem;
  for (const auto& r : db.rows("SELECT p.text, count(*) FROM searches s JOIN problems p ON p.id = s.problem_id "
                               "GROUP BY p.text")) {
    db_by_problem[r[0]] = std::stoi(r[1]);
  }
  EXPECT_EQ(db_by_problem, by_problem);

  // Failed calls: every call that returned an error (cudaErrorNotReady is a query's "not yet";
  // cudaGetLastError returns an earlier call's) is a failure, a failed synchronization or a
  // failed plan execution.
  std::set<std::string> error_state;
  for (const auto& r : db.rows(fmt::format("SELECT name FROM apis WHERE flags & {}", trace::kApiError))) {
    error_state.insert(r[0]);
  }
  int64_t failed = 0, failed_any = 0;
  for (const auto& l : lines) {
    if (l.value("type", "") != "call") continue;
    int ret = l["ret"].get<int>();
    failed_any += ret != 0 && ret != 600;
    failed += ret != 0 && ret != 600 && !error_state.count(l["api"].get<std::string>());
  }
  EXPECT_EQ(db.count("SELECT (SELECT count(*) FROM failures) + (SELECT count(*) FROM syncs WHERE ret != 0) + "
                     "(SELECT count(*) FROM executions WHERE ret != 0)"),
            failed);
  EXPECT_EQ(db.count("SELECT count(*) FROM calls WHERE ret NOT IN (0, 600)"), failed_any);

  // Bytes allocated, per process.
  std::map<std::string, int64_t> allocated;
  for (const auto& p : summary["per_process"]) {
    int64_t bytes = 0;
    for (const auto& m : p["memory"]) bytes += m["allocated"].get<int64_t>();
    allocated[std::to_string(p["pid"].get<int64_t>())] += bytes;
  }
  std::map<std::string, int64_t> db_allocated;
  for (const auto& r : db.rows("SELECT p.pid, coalesce(sum(a.size), 0) FROM processes p LEFT JOIN allocations a "
                               "ON a.process_id = p.id AND a.ok AND NOT a.freed GROUP BY p.id")) {
    db_allocated[r[0]] += std::stoll(r[1]);
  }
  EXPECT_EQ(db_allocated, allocated);

  // Findings in the report's order, with their processes.
  std::vector<std::string> rules, db_rules;
  for (const auto& f : report["findings"]) rules.push_back(f["rule"].get<std::string>());
  for (const auto& r : db.rows("SELECT rule FROM findings ORDER BY id")) db_rules.push_back(r[0]);
  EXPECT_EQ(db_rules, rules);
  size_t k = 0;
  for (const auto& f : report["findings"]) {
    ++k;
    std::set<std::string> pids, db_pids;
    for (const auto& pid : f["pids"]) pids.insert(std::to_string(pid.get<int64_t>()));
    for (const auto& r : db.rows("SELECT p.pid FROM finding_processes fp JOIN processes p ON p.id = fp.process_id "
                                 "WHERE fp.finding_id = " +
                                 std::to_string(k))) {
      db_pids.insert(r[0]);
    }
    EXPECT_EQ(db_pids, pids) << f["rule"];
    EXPECT_EQ(db.count("SELECT count(*) FROM finding_call_sites WHERE finding_id = " + std::to_string(k)),
              int64_t(f["call_sites"].size()));
    EXPECT_EQ(json::parse(db.text("SELECT evidence FROM findings WHERE id = " + std::to_string(k))), f["evidence"]);
  }

  // Processes with their ranks.
  std::set<std::pair<std::string, std::string>> ranks, db_ranks;
  for (const auto& p : summary["per_process"]) {
    int rank = p["rank"].get<int>();
    ranks.insert({std::to_string(p["pid"].get<int64_t>()), rank < 0 ? "NULL" : std::to_string(rank)});
  }
  for (const auto& r : db.rows("SELECT pid, rank FROM processes")) db_ranks.insert({r[0], r[1]});
  EXPECT_EQ(db_ranks, ranks);
}

// The bundled example's search storm (scripts/demo.sh); with `ranks`, a second rank as docs/sql.md
// records it: plans picked by heuristics, every problem searched twice, engine 0's plans rejected
// by fault mode.
std::vector<std::string> storm(bool ranks) {
  std::vector<std::string> runs;
  std::string dir = fresh_dir("storm");
  std::string exe = build_path("examples/simulated_storm");
  RunResult r =
      record(dir + "/rank0", {exe, "--benchmark", "--bwd", "--shapes", "12", "--steps", "20"}, {{"RANK", "0"}});
  EXPECT_EQ(r.status, 0) << r.err;
  runs.push_back(dir + "/rank0");
  if (ranks) {
    r = record(dir + "/rank1", {exe, "--bwd", "--shapes", "12", "--steps", "20", "--repeat", "2"}, {{"RANK", "1"}},
               {"-q", "--fault", "cudnn-finalize:NOT_SUPPORTED,engine=0"});
    EXPECT_EQ(r.status, 0) << r.err;
    runs.push_back(dir + "/rank1");
  }
  return runs;
}

TEST(SqliteExport, SearchStormMatchesDumpAndAnalysis) {
  std::vector<std::string> runs = storm(false);
  std::string path = export_db(runs, "sqlite-storm");
  expect_matches(path, runs);
  Db db(path);
  // 12 shapes, forward and both backward convolutions: 36 problems, each searched once.
  EXPECT_EQ(db.count("SELECT count(*) FROM problems WHERE id IN (SELECT problem_id FROM searches)"), 36);
  EXPECT_EQ(db.count("SELECT count(*) FROM searches WHERE mode = 'benchmark'"), 36);
  EXPECT_GT(db.count("SELECT count(*) FROM candidates WHERE time_ms IS NOT NULL"), 36);
  // The winner's executions (20 steps) are the application's; the timed runs are candidates.
  EXPECT_GE(db.count("SELECT count(*) FROM executions WHERE NOT candidate"), 36 * 20);
  EXPECT_GT(db.count("SELECT count(*) FROM executions WHERE candidate"), 0);
  EXPECT_GT(db.count("SELECT count(*) FROM syncs"), 0);
  // Every item row points at its call, and the call's API is the item's.
  EXPECT_EQ(db.count("SELECT count(*) FROM executions e LEFT JOIN calls c ON c.id = e.call_id "
                     "WHERE c.id IS NULL OR c.ts_ns != e.ts_ns OR c.tid != e.tid"),
            0);
  EXPECT_EQ(db.count("SELECT count(*) FROM syncs s JOIN calls c ON c.id = s.call_id WHERE c.api_id = s.api_id"),
            db.count("SELECT count(*) FROM syncs"));
  // Wall-clock times: within the recording's span, after its start.
  EXPECT_EQ(db.count("SELECT count(*) FROM calls c JOIN processes p ON p.id = c.process_id "
                     "WHERE c.ts_ns < p.start_ns OR c.ts_ns > p.last_ns"),
            0);
  EXPECT_GT(db.count("SELECT min(ts_ns) FROM calls"), int64_t(1'600'000'000) * 1'000'000'000);
  std::string kinds = db.text(
      "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE type = 'index' "
      "AND name IN ('calls_stack', 'searches_problem', 'candidates_search') ORDER BY name)");
  EXPECT_EQ(kinds, "candidates_search,searches_problem");  // none on the largest tables (docs/sql.md)
}

TEST(SqliteExport, OutOfMemoryFixturesMatchDumpAndAnalysis) {
  for (const auto& entry : fs::directory_iterator(kFixtures + "/oom-postmortem/fire")) {
    SCOPED_TRACE(entry.path().string());
    std::vector<std::string> paths = {entry.path().string()};
    std::string path = export_db(paths, "sqlite-oom");
    expect_matches(path, paths);
    Db db(path);
    EXPECT_GT(db.count("SELECT count(*) FROM findings WHERE rule = 'oom-postmortem'"), 0);
    // Failed allocation requests (killed.jsonl has none: the kernel's OOM killer ended it).
    int64_t refused = 0;
    for (const auto& l : of_type(dump(paths[0]), "call")) {
      std::string api = l["api"].get<std::string>();
      refused += l["ret"].get<int>() != 0 && (api.find("Malloc") != std::string::npos ||
                                              api.find("MemAlloc") != std::string::npos || api == "cuMemCreate");
    }
    EXPECT_EQ(db.count("SELECT count(*) FROM allocations WHERE NOT ok"), refused);
    if (entry.path().filename() != "killed.jsonl") {
      EXPECT_GT(refused, 0);
    }
    EXPECT_EQ(db.count("SELECT count(*) FROM allocations WHERE NOT ok"),
              db.count("SELECT count(*) FROM failures f JOIN allocations a ON a.call_id = f.call_id"));
    // Memory samples follow the allocations: the last total of a device is what is still live.
    EXPECT_GT(db.count("SELECT count(*) FROM memory"), 0);
  }
}

TEST(SqliteExport, RanksThatChoseDifferentPlans) {
  std::vector<std::string> paths = {kFixtures + "/algo-divergence/fire/rank0.jsonl",
                                    kFixtures + "/algo-divergence/fire/rank1.jsonl"};
  std::string path = export_db(paths, "sqlite-ranks");
  expect_matches(path, paths);
  Db db(path);
  EXPECT_EQ(db.rows("SELECT rank, host FROM processes ORDER BY rank"),
            (std::vector<std::vector<std::string>>{{"0", "node0"}, {"1", "node1"}}));
  EXPECT_EQ(db.count("SELECT count(DISTINCT fp.process_id) FROM findings f JOIN finding_processes fp "
                     "ON fp.finding_id = f.id WHERE f.rule = 'algo-divergence'"),
            2);
  // One problem id for the layer on both ranks, whose winners differ.
  EXPECT_GT(
      db.count("SELECT count(*) FROM (SELECT s.problem_id FROM searches s JOIN processes p ON p.id = s.process_id "
               "GROUP BY s.problem_id HAVING count(DISTINCT p.rank) = 2 AND count(DISTINCT s.winner_engine || "
               "'/' || s.winner_knobs) > 1)"),
      0);
}

TEST(SqliteExport, InjectedFaults) {
  std::string dir = fresh_dir("sqlite-faults-run");
  std::vector<std::string> argv = {program("fault_probe")};
  for (int k = 0; k < 6; ++k) argv.push_back("malloc:100");
  RunResult r = record(dir, argv, {}, {"-q", "--fault", "alloc:OOM,every=2"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> paths = {dir};
  std::string path = export_db(paths, "sqlite-faults");
  expect_matches(path, paths);
  size_t injected = 0;
  for (const auto& l : dump(dir)) injected += l.value("type", "") == "call" && l.contains("injected");
  ASSERT_EQ(injected, 3u);
  Db db(path);
  EXPECT_EQ(db.rows("SELECT a.name, f.ret, f.k FROM faults f JOIN apis a ON a.id = f.api_id ORDER BY f.ts_ns"),
            (std::vector<std::vector<std::string>>{
                {"cudaMalloc", "2", "2"}, {"cudaMalloc", "2", "4"}, {"cudaMalloc", "2", "6"}}));
  EXPECT_EQ(db.count("SELECT count(*) FROM calls WHERE flags & 2"), 3);
  EXPECT_EQ(db.count("SELECT count(*) FROM failures WHERE injected"), 3);
  EXPECT_EQ(db.count("SELECT count(*) FROM allocations WHERE NOT ok"), 3);
  EXPECT_EQ(db.count("SELECT count(*) FROM allocations WHERE ok AND NOT freed"), 3);
}

// Every ```sql block of docs/sql.md, run against a two-rank storm: valid, and with an answer.
TEST(SqliteExport, DocumentedQueriesRunAndAnswer) {
  std::ifstream doc(kRules + "/../docs/sql.md");
  ASSERT_TRUE(doc) << "docs/sql.md";
  std::vector<std::string> queries;
  std::string line, current;
  bool in_sql = false;
  while (std::getline(doc, line)) {
    if (!in_sql && line.rfind("```sql", 0) == 0) {
      in_sql = true;
      current.clear();
    } else if (in_sql && line.rfind("```", 0) == 0) {
      in_sql = false;
      queries.push_back(current);
    } else if (in_sql) {
      current += line + "\n";
    }
  }
  ASSERT_GE(queries.size(), 5u);
  std::vector<std::string> runs = storm(true);
  Db db(export_db(runs, "sqlite-docs"));
  for (const auto& q : queries) {
    std::string error;
    auto rows = db.rows(q, &error);
    EXPECT_EQ(error, "") << q;
    EXPECT_FALSE(rows.empty()) << "no rows from:\n" << q;
  }
}

// Ctrl-C (or a job scheduler's SIGTERM) during an export: the partial file (.FILE.XXXXXX.part,
// cmds/output_file.h) is removed and nothing is left under the name asked for.
TEST(SqliteExport, AnInterruptedExportLeavesNoFileBehind) {
  std::string dir = fresh_dir("sqlite-interrupt") + "/run";
  RunResult rec = record(dir, {build_path("examples/simulated_storm"), "--benchmark", "--shapes", "12", "--steps", "3000"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  std::string out_dir = fresh_dir("sqlite-interrupt-out");
  std::string out = out_dir + "/job.sqlite";
  Child c = spawn({cuprobe_bin(), "export", "-q", "--format", "sqlite", "-o", out, dir});
  ASSERT_GT(c.pid, 0);
  // The partial file, once the writer has written into it.
  auto partial = [&]() -> std::string {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(out_dir, ec)) {
      std::string name = e.path().filename().string();
      if (name.rfind(".job.sqlite.", 0) == 0 && e.path().extension() == ".part") return e.path().string();
    }
    return "";
  };
  bool started = false;
  for (int i = 0; i < 6000 && !started; ++i) {
    std::string p = partial();
    std::error_code ec;
    started = !p.empty() && fs::file_size(p, ec) > 0;
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(started) << "the export never wrote into a partial file in " << out_dir;
  kill(c.pid, SIGINT);
  int status = c.wait();
  if (status == 0) GTEST_SKIP() << "the export finished before the signal arrived (machine too fast for the window)";
  EXPECT_EQ(status, 128 + SIGINT);
  EXPECT_EQ(partial(), "");
  EXPECT_FALSE(fs::exists(out));
}

// The large tables' b-tree pages, written by cuprobe (export/sqlite_pages.h), hold exactly the rows
// SQLite itself writes when every row goes through SQL: for a two-rank storm, the out-of-memory
// fixtures and a trace whose plans have knob strings too long for a leaf page (those rows go
// through SQL either way), with SQLite's smallest page (b-trees three levels deep) and the
// export's own. SQLite's integrity check accepts every database.
TEST(SqliteExport, PagesWrittenDirectlyHoldWhatSqlWrites) {
  std::vector<std::string> paths = storm(true);
  for (const auto& entry : fs::directory_iterator(kFixtures + "/oom-postmortem/fire")) paths.push_back(entry.path());
  std::string dir = fresh_dir("sqlite-pages");
  {
    std::ifstream in(kFixtures + "/algo-divergence/fire/rank0.jsonl");
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str(), knobs = "tile_size=5,tilek=0", longer = knobs + ",note=" + std::string(700, 'k');
    size_t replaced = 0;
    for (size_t at = s.find(knobs); at != std::string::npos; at = s.find(knobs, at + longer.size()), ++replaced) {
      s.replace(at, knobs.size(), longer);
    }
    ASSERT_GT(replaced, 0u);
    std::ofstream(dir + "/long_knobs.jsonl") << s;
    paths.push_back(dir + "/long_knobs.jsonl");
  }
  for (uint32_t page_size : {512u, 16384u}) {
    SCOPED_TRACE(page_size);
    std::string pages = fmt::format("{}/pages-{}.sqlite", dir, page_size), sql = fmt::format("{}/sql-{}.sqlite", dir, page_size);
    for (bool through_sql : {false, true}) {
      exporter::ExportJob job;
      job.paths = paths;
      job.sqlite_page_size = page_size;
      job.sqlite_rows_through_sql = through_sql;
      auto stats = exporter::export_sqlite(job, through_sql ? sql : pages);
      ASSERT_TRUE(stats) << stats.error().message;
    }
    Db db(pages);
    EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(db.count("PRAGMA page_size"), int64_t(page_size));
    db.rows("ATTACH '" + sql + "' AS sql");
    auto tables = db.rows("SELECT name FROM sql.sqlite_schema WHERE type = 'table'");
    ASSERT_GE(tables.size(), 20u);
    for (const auto& t : tables) {
      SCOPED_TRACE(t[0]);
      // meta's export time differs, nothing else does.
      std::string rows = t[0] == "meta" ? "SELECT * FROM {}.meta WHERE key NOT LIKE 'exported_at%'" : "SELECT * FROM {}.{}";
      std::string a = fmt::format(fmt::runtime(rows), "main", t[0]), b = fmt::format(fmt::runtime(rows), "sql", t[0]);
      EXPECT_EQ(db.count("SELECT count(*) FROM (" + a + ")"), db.count("SELECT count(*) FROM (" + b + ")"));
      EXPECT_EQ(db.count("SELECT count(*) FROM (" + a + " EXCEPT " + b + ")"), 0);
      EXPECT_EQ(db.count("SELECT count(*) FROM (" + b + " EXCEPT " + a + ")"), 0);
    }
    // Rows were in the large tables (a tree of more than one leaf) and ran in ascending order;
    // the long knobs made it whole.
    EXPECT_GT(db.count("SELECT count(*) FROM calls"), 10000);
    EXPECT_EQ(db.count("SELECT count(*) FROM executions WHERE length(knobs) > 700"),
              db.count("SELECT count(*) FROM sql.executions WHERE length(knobs) > 700"));
    EXPECT_GT(db.count("SELECT count(*) FROM executions WHERE length(knobs) > 700"), 0);
    EXPECT_EQ(db.count("SELECT count(*) FROM calls WHERE id != rowid"), 0);
    // Problem hashes are the trace's (a dangling text once made them garbage).
    EXPECT_EQ(db.count("SELECT count(*) FROM problems WHERE hash IS NOT NULL AND hash NOT GLOB "
                       "'0x[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]"
                       "[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'"),
              0);
    EXPECT_GT(db.count("SELECT count(*) FROM problems WHERE hash IS NOT NULL"), 0);
  }
}

// The tables and columns of docs/sql.md and of an exported database are the ones
// export/sqlite_schema.h declares (issue 27: the column order was spelled four times).
namespace schema = exporter::sqlite_schema;

const std::string kSqlDoc = kRules + "/../docs/sql.md";
constexpr const char* kBlockStart = "<!-- sqlite_schema.h: ";
constexpr const char* kBlockEnd = "<!-- end sqlite_schema.h -->";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// How SQLite stores a column's values (its affinity): the declared type's first word.
std::string affinity(const schema::Column& c) {
  std::string type = c.type;
  return type.substr(0, type.find(' '));
}

// A table's columns as docs/sql.md shows them, in their order; consecutive columns of the same
// type and meaning share a line.
std::string markdown_columns(const schema::Table& t) {
  std::string out = "| column | type | meaning |\n| --- | --- | --- |\n";
  for (size_t c = 0; c < t.count;) {
    size_t end = c + 1;
    while (end < t.count && std::string(t.columns[end].doc) == t.columns[c].doc &&
           affinity(t.columns[end]) == affinity(t.columns[c])) {
      ++end;
    }
    std::string names;
    for (size_t k = c; k < end; ++k) names += fmt::format("{}`{}`", k > c ? ", " : "", t.columns[k].name);
    out += fmt::format("| {} | {} | {} |\n", names, affinity(t.columns[c]), t.columns[c].doc);
    c = end;
  }
  return out;
}

// docs/sql.md's generated blocks: the table each names, and where its text starts and ends.
struct DocBlock {
  std::string table;
  size_t begin = 0, end = 0;
};
std::vector<DocBlock> doc_blocks(const std::string& doc) {
  std::vector<DocBlock> out;
  for (size_t at = doc.find(kBlockStart); at != std::string::npos; at = doc.find(kBlockStart, at + 1)) {
    size_t name = at + std::strlen(kBlockStart), line_end = doc.find(" -->\n", name);
    size_t end = doc.find(kBlockEnd, name);
    if (line_end == std::string::npos || end == std::string::npos) {
      ADD_FAILURE() << "docs/sql.md: an unterminated block at byte " << at;
      break;
    }
    out.push_back({doc.substr(name, line_end - name), line_end + 5, end});
  }
  return out;
}

std::vector<std::string> declared_tables() {
  std::vector<std::string> out;
  for (const schema::Table& t : schema::kTables) out.push_back(t.name);
  return out;
}

TEST(SqliteExport, TablesAreTheDeclaredOnes) {
  std::string path = export_db({kFixtures + "/algo-divergence/fire/rank0.jsonl"}, "sqlite-tables");
  Db db(path);
  std::vector<std::string> in_db;
  for (const auto& r : db.rows("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid")) {
    in_db.push_back(r[0]);
  }
  EXPECT_EQ(in_db, declared_tables());
  // docs/sql.md: a block per table, each once (in the order the page explains them).
  std::vector<std::string> documented;
  for (const DocBlock& b : doc_blocks(read_text(kSqlDoc))) documented.push_back(b.table);
  std::vector<std::string> sorted_documented = documented, declared = declared_tables();
  std::sort(sorted_documented.begin(), sorted_documented.end());
  std::sort(declared.begin(), declared.end());
  EXPECT_EQ(sorted_documented, declared) << "docs/sql.md documents: " << fmt::format("{}", fmt::join(documented, ", "));
}

TEST(SqliteExport, DocumentedColumnsAreTheDeclaredOnes) {
  // The database: each table's columns, their order, types and keys.
  Db db(export_db({kFixtures + "/algo-divergence/fire/rank0.jsonl"}, "sqlite-columns"));
  for (const schema::Table& t : schema::kTables) {
    SCOPED_TRACE(t.name);
    std::vector<std::vector<std::string>> declared;
    for (size_t c = 0; c < t.count; ++c) {
      bool key = std::string(t.columns[c].type).find("PRIMARY KEY") != std::string::npos;
      declared.push_back({t.columns[c].name, affinity(t.columns[c]), key ? "1" : "0"});
    }
    EXPECT_EQ(db.rows(fmt::format("SELECT name, type, pk FROM pragma_table_info('{}')", t.name)), declared);
  }
  // processes.trace_state's words are reader.h's (kFileStateNames), each documented.
  std::string states;
  for (const schema::Column& c : schema::columns::processes) {
    if (std::string(c.name) == "trace_state") states = c.doc;
  }
  for (const auto& state : reader::kFileStateNames) {
    EXPECT_NE(states.find(fmt::format("`{}`", state.sqlite)), std::string::npos) << state.sqlite;
  }
  // docs/sql.md: each block is the table's generated text.
  std::string doc = read_text(kSqlDoc), updated = doc;
  std::vector<DocBlock> blocks = doc_blocks(doc);
  ASSERT_FALSE(blocks.empty()) << "docs/sql.md has no column block";
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
    const schema::Table* t = schema::table_named(b->table);
    if (!t) {
      ADD_FAILURE() << "docs/sql.md documents a table the export does not have: " << b->table;
      continue;
    }
    std::string want = markdown_columns(*t);
    EXPECT_EQ(doc.substr(b->begin, b->end - b->begin), want)
        << "docs/sql.md's columns of " << b->table << " are not the declared ones (analyzer/export/sqlite_schema.h); "
        << "CUPROBE_UPDATE_DOCS=1 rewrites them";
    updated.replace(b->begin, b->end - b->begin, want);
  }
  const char* update = std::getenv("CUPROBE_UPDATE_DOCS");
  if (update && std::string(update) == "1" && updated != doc) std::ofstream(kSqlDoc, std::ios::trunc) << updated;
}

// Every value has its column's declared type (or is NULL), on exports of the fixtures that fill
// most tables: a row filled in the wrong order would put text in an integer column.
TEST(SqliteExport, ValuesHaveTheirColumnsTypes) {
  std::vector<std::string> paths = {kFixtures + "/algo-divergence/fire/rank0.jsonl",
                                    kFixtures + "/algo-divergence/fire/rank1.jsonl"};
  for (const auto& entry : fs::directory_iterator(kFixtures + "/oom-postmortem/fire")) paths.push_back(entry.path());
  Db db(export_db(paths, "sqlite-types"));
  int64_t values = 0;
  for (const schema::Table& t : schema::kTables) {
    for (size_t c = 0; c < t.count; ++c) {
      SCOPED_TRACE(fmt::format("{}.{}", t.name, t.columns[c].name));
      std::string type = affinity(t.columns[c]);
      std::transform(type.begin(), type.end(), type.begin(), [](char ch) { return char(std::tolower(ch)); });
      EXPECT_EQ(db.count(fmt::format("SELECT count(*) FROM {} WHERE typeof({}) NOT IN ('null', '{}')", t.name,
                                     t.columns[c].name, type)),
                0);
      values += db.count(fmt::format("SELECT count({}) FROM {}", t.columns[c].name, t.name));
    }
  }
  EXPECT_GT(values, 1000);
}

TEST(SqliteExport, NamesTheFileItCannotCreate) {
  exporter::ExportJob job;
  job.paths = {kFixtures + "/algo-divergence/fire/rank0.jsonl"};
  for (const std::string& where : {std::string("/proc/cuprobe-test.sqlite"), fresh_dir("sqlite-dir")}) {
    if (where != "/proc/cuprobe-test.sqlite") std::ofstream(where + "/keep") << "x";  // a directory in the way
    auto stats = exporter::export_sqlite(job, where);
    ASSERT_FALSE(stats) << where;
    EXPECT_NE(stats.error().message.find("cannot create " + where + ": "), std::string::npos) << stats.error().message;
  }
}


// Issue 27: analyze and the exports replayed device memory separately and disagreed on a trace
// that allocates an address twice with no free seen in between, frees it, then fails a 100 GiB
// request (analyze: peak 2 GiB, 1 GiB live at the failure; SQLite: 1 GiB and 0). One replay now
// (analysis/trackers/memory_replay.h): the block the trace lost the free of is gone when its
// address is allocated again, everywhere.
TEST(SqliteExport, MemoryAgreesWithAnalyzeWhenAFreeWasNotSeen) {
  constexpr uint64_t kGiB = 1ull << 30;
  std::string dir = fresh_dir("memory-agreement");
  std::string path = dir + "/lost_free.jsonl";
  std::ofstream(path)
      << R"({"type":"process","pid":2701,"ppid":1,"host":"node0","rank":-1,"local_rank":-1,"world_size":-1,"cmdline":["python3","train.py"],"start_ns":1000000000,"start_wall_ns":1796000000000000000,"state":"exited","devices":[{"index":0,"name":"NVIDIA H100","total_mem":85899345920,"uuid":"GPU-fixture-2701","pci_bus_id":"0000:18:00.0","cc":"9.0"}],"end_ns":1010000000})"
         "\n"
      << R"({"type":"call","api":"cudaMalloc","ret":0,"ts_ns":1001000000,"dur_ns":20000,"pid":2701,"tid":2701,"device":0,"ptr":"0x7f0000000000","size":1073741824})"
         "\n"
      << R"({"type":"call","api":"cudaMalloc","ret":0,"ts_ns":1002000000,"dur_ns":20000,"pid":2701,"tid":2701,"device":0,"ptr":"0x7f0000000000","size":1073741824})"
         "\n"
      << R"({"type":"call","api":"cudaFree","ret":0,"ts_ns":1003000000,"dur_ns":20000,"pid":2701,"tid":2701,"device":0,"ptr":"0x7f0000000000"})"
         "\n"
      << R"({"type":"call","api":"cudaMalloc","ret":2,"ts_ns":1004000000,"dur_ns":20000,"pid":2701,"tid":2701,"device":0,"ptr":"0x0","size":107374182400})"
         "\n";
  // analyze: the device's peak, and what was live at the failure.
  RunResult a = run({cuprobe_bin(), "analyze", "--json", path});
  ASSERT_LE(a.status, 1) << a.err;
  json report = json::parse(a.out);
  uint64_t peak = report["summary"]["per_process"][0]["memory"][0]["peak"].get<uint64_t>();
  uint64_t live_at_oom = UINT64_MAX;
  for (const auto& f : report["findings"]) {
    if (f["rule"] == "oom-postmortem") live_at_oom = f["evidence"]["live"].get<uint64_t>();
  }
  EXPECT_EQ(peak, kGiB);
  EXPECT_EQ(live_at_oom, 0u);
  // SQLite (the timeline the report and Perfetto draw from): the same peak and the same live bytes.
  Db db(export_db({path}, "memory-agreement-db"));
  EXPECT_EQ(uint64_t(db.count("SELECT max(total_bytes) FROM memory WHERE device = 0")), peak);
  EXPECT_EQ(uint64_t(db.count("SELECT total_bytes FROM memory WHERE ts_ns <= (SELECT ts_ns FROM allocations WHERE NOT ok) "
                              "ORDER BY ts_ns DESC, rowid DESC LIMIT 1")),
            live_at_oom);
}

// The same agreement on every rule fixture that allocates memory: analyze's per-device peak is the
// highest total the SQLite export's memory table reaches.
TEST(SqliteExport, MemoryPeaksAgreeWithAnalyzeOnTheFixtures) {
  int compared = 0;
  for (const auto& rule : fs::directory_iterator(kFixtures)) {
    for (const char* side : {"fire", "quiet"}) {
      if (!fs::is_directory(rule.path() / side)) continue;
      for (const auto& entry : fs::directory_iterator(rule.path() / side)) {
        if (entry.path().extension() != ".jsonl") continue;
        std::string path = entry.path().string();
        RunResult a = run({cuprobe_bin(), "analyze", "--json", path});
        if (a.status > 1) continue;
        json report = json::parse(a.out, nullptr, false);
        if (report.is_discarded()) continue;
        std::unique_ptr<Db> db;
        for (const auto& p : report["summary"]["per_process"]) {
          for (const auto& m : p["memory"]) {
            if (m["peak"].get<uint64_t>() == 0) continue;
            SCOPED_TRACE(path);
            if (!db) db = std::make_unique<Db>(export_db({path}, "memory-peaks-db"));
            int64_t exported = db->count(fmt::format(
                "SELECT max(m.total_bytes) FROM memory m JOIN processes p ON p.id = m.process_id WHERE p.pid = {} "
                "AND m.device = {}",
                p["pid"].get<int64_t>(), m["device"].get<int>()));
            EXPECT_EQ(uint64_t(exported), m["peak"].get<uint64_t>());
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 10);
}

}  // namespace
}  // namespace cuprobe::test
