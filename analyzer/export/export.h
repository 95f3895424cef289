// The exports of a job (`cuprobe export`) and its HTML report (`cuprobe report`): each writer
// streams the job's timeline (timeline.h) into its format, with the analysis's findings placed at
// the time they concern.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/engine.h"
#include "export/timeline.h"

namespace cuprobe::exporter {

struct ExportJob {
  std::vector<std::string> paths;  // run directories, trace files, dump JSON Lines
  analysis::Report report;         // findings (Finding::at_wall_ns), summary, step starts
  WalkOptions walk;                // progress, warnings
  std::vector<std::string> symbol_dirs;  // --symbols: where else the traced binaries are
  // The report's comparison with another run (report --compare-with: analysis/diff.h, that run as
  // A and this job as B); null when none.
  nlohmann::json diff;
  // SQLite: the large tables (sqlite_schema.h's `large`: calls, syncs, failures, executions,
  // allocations, memory) are written as b-tree pages (sqlite_pages.h) unless this is set, or
  // CUPROBE_SQLITE_ROWS=sql: then every row goes through SQL, the reference the tests compare the
  // pages with (docs/sql.md).
  bool sqlite_rows_through_sql = false;
  uint32_t sqlite_page_size = 16384;
};

// The analysis's record of a walked process (its label, step starts), matched by pid and host;
// nullptr when the analysis has none.
const analysis::ProcessTimes* times_of(const ExportJob& job, const ProcessInfo& p);

// What a writer wrote, for the command's closing line.
struct ExportStats {
  uint64_t processes = 0;
  uint64_t events = 0;       // calls read
  uint64_t items = 0;        // packets, rows or points written
  uint64_t bytes = 0;        // size of the output file
  std::vector<std::string> aggregated;  // what was aggregated or left out, in words (the report)
};

// Perfetto's protobuf trace format (TracePacket / TrackEvent, interned names), perfetto.cpp.
Result<ExportStats> export_perfetto(const ExportJob& job, const std::string& out_path);
// Chrome's JSON trace event format, for small runs (perfetto.cpp).
Result<ExportStats> export_chrome(const ExportJob& job, const std::string& out_path);
// A SQLite database (docs/sql.md), sqlite.cpp.
Result<ExportStats> export_sqlite(const ExportJob& job, const std::string& out_path);
// One self-contained HTML file, report.cpp.
Result<ExportStats> write_report(const ExportJob& job, const std::string& out_path);

}  // namespace cuprobe::exporter
