// `cuprobe export` (a job's timeline as a Perfetto trace, Chrome JSON or a SQLite database) and
// `cuprobe report` (one self-contained HTML file). Both analyze the job first (the findings are
// part of what they show), then stream its traces once into the writer (export/export.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "analysis/common.h"
#include "analysis/diff.h"
#include "cli.h"
#include "cmds/output_file.h"
#include "export/export.h"
#include "utf8.h"

namespace cuprobe::cli {

namespace {

constexpr const char* kExportHelp = R"(Usage: cuprobe export --format FORMAT -o FILE [options] PATH...

Writes a job's timeline in a format other tools open. PATH is a run directory, a trace file or
JSON Lines from `cuprobe dump`; many PATHs (every rank, every host) are one job, aligned by wall
clock. Times are the traced machines' wall clock (Unix epoch), the clock a PyTorch profiler
trace of the same run uses, so the two line up side by side.

Formats:
  perfetto   Perfetto's protobuf trace (open at https://ui.perfetto.dev, or with
             trace_processor): a process track per traced process (host, rank, pid); per thread
             a track of executions (engine, knobs, workspace), synchronizations and failed calls,
             and one of cuDNN plan selections (benchmark searches, each candidate's time as
             arguments); counter tracks of device memory per device and owner; instant events for
             injected faults and for each finding. Streams: any size.
  chrome     the same as Chrome's JSON trace events (chrome://tracing, Perfetto's legacy
             importer); for small runs only: JSON of a few hundred MB is more than a browser
             opens.
  sqlite     a SQLite database: processes, devices, calls, problems, searches, candidates,
             executions, allocations, stacks, faults and findings, with indexes; schema and
             example queries in docs/sql.md. The largest tables' pages are written by cuprobe in
             SQLite's file format (CUPROBE_SQLITE_ROWS=sql: every row through SQL, slower).

Options:
  --format FORMAT      perfetto (default), chrome or sqlite
  -o, --output FILE    where to write (required; replaced if it exists)
  --rules DIR          also load rules from DIR (for the findings; as for analyze)
  --set RULE.PARAM=V   change a rule's threshold (as for analyze)
  --symbols DIR        where else the traced binaries are, for call sites (as for analyze)
  -q, --quiet          no progress on standard error (shown only on a terminal anyway)
  -h, --help           this text

Exit status: 0 written, 2 usage error or unreadable input.
)";

constexpr const char* kReportHelp = R"(Usage: cuprobe report -o FILE [options] PATH...

Writes one self-contained HTML file (scripts and data inline: no network access, opens from
disk, mails as an attachment) about a job: the findings with their evidence and call sites, device
memory over time per device stacked by owner with out-of-memory failures marked, plan searches
over time against training steps, a per-rank table of problems that got different plans, the
fault-injection summary and the job summary. PATH is as for `cuprobe analyze`.

Long jobs are aggregated before they are embedded (memory in time buckets with the peak of each,
searches counted per bucket, the largest tables cut to their first rows); the report says what
was aggregated.

With --compare-with RUN, the page also compares this job with RUN, as `cuprobe diff RUN PATH`
does (RUN as A, this job as B): step time, warm-up, peak memory and the causes.

Options:
  -o, --output FILE    where to write (default report.html; replaced if it exists)
  --compare-with RUN   a section comparing the job with RUN (paths of one run joined by commas)
  --rules DIR          also load rules from DIR (as for analyze)
  --set RULE.PARAM=V   change a rule's threshold (as for analyze)
  --symbols DIR        where else the traced binaries are, for call sites (as for analyze)
  -q, --quiet          no progress on standard error (shown only on a terminal anyway)
  -h, --help           this text

Exit status: 0 written, 2 usage error or unreadable input.
)";

// A percentage on standard error, redrawn in place; only on a terminal.
class ProgressLine {
 public:
  explicit ProgressLine(bool on, const char* what) : on_(on), what_(what) {}
  ~ProgressLine() { done(); }
  void operator()(uint64_t done, uint64_t total) {
    if (!on_ || total == 0) return;
    int pct = int(double(done) * 100.0 / double(total));
    if (pct == last_) return;
    last_ = pct;
    shown_ = true;
    fmt::print(stderr, "\r{}: {:3d}% ({} of {} calls)", what_, std::min(pct, 100), done, total);
    std::fflush(stderr);
  }
  void done() {
    if (shown_) fmt::print(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool on_;
  const char* what_;
  int last_ = -1;
  bool shown_ = false;
};

struct Common {
  analysis::AnalyzeOptions analyze;
  std::vector<std::string> compare_with;  // report --compare-with: the run compared with (A)
  std::string output;
  bool quiet = false;
};

void common_options(OptionParser& options, Common& c) {
  options.value("-o,--output", [&](const std::string& v) { c.output = v; });
  options.value("--rules", [&](const std::string& v) { c.analyze.rule_dirs.push_back(v); });
  options.value("--set", [&](const std::string& v) { c.analyze.settings.push_back(v); });
  options.value("--symbols", [&](const std::string& v) { c.analyze.symbol_dirs.push_back(v); });
  options.flag("-q,--quiet", [&] { c.quiet = true; });
}

// Analyzes, then runs the writer; prints what was written. `what` names the command.
int run_writer(const char* what, Common& c,
               Result<exporter::ExportStats> (*writer)(const exporter::ExportJob&, const std::string&)) {
  // Checked, and the temporary beside it created, before the analysis: a wrong -o is said at once.
  OutputFile file("-o", c.output);
  auto start = std::chrono::steady_clock::now();
  auto report = analysis::analyze(c.analyze);
  if (!report) {
    fmt::print(stderr, "cuprobe {}: {}\n", what, report.error().message);
    return kExitUsage;
  }
  exporter::ExportJob job;
  if (!c.compare_with.empty()) {
    analysis::DiffOptions o{c.compare_with, c.analyze.paths, c.analyze.threads};
    auto d = analysis::diff_runs(o);
    if (!d) {
      fmt::print(stderr, "cuprobe {}: --compare-with: {}\n", what, d.error().message);
      return kExitUsage;
    }
    job.diff = std::move(*d);
  }
  job.paths = c.analyze.paths;
  job.report = std::move(*report);
  job.symbol_dirs = c.analyze.symbol_dirs;
  std::vector<std::string> warnings;
  job.walk.warnings = &warnings;
  ProgressLine progress(!c.quiet && isatty(2) != 0, what);
  job.walk.progress = [&](uint64_t done, uint64_t total) { progress(done, total); };
  auto stats = writer(job, file.temp());
  progress.done();
  if (!stats) {
    fmt::print(stderr, "cuprobe {}: {}\n", what, stats.error().message);
    return kExitUsage;
  }
  if (std::string err = file.commit(); !err.empty()) {
    fmt::print(stderr, "cuprobe {}: cannot write {}: {}\n", what, c.output, err);
    return kExitUsage;
  }
  // The analysis and the walk read the same inputs: a damaged trace is named once.
  for (const auto& w : warnings) {
    if (std::find(job.report.warnings.begin(), job.report.warnings.end(), w) == job.report.warnings.end()) {
      job.report.warnings.push_back(w);
    }
  }
  for (const auto& w : job.report.warnings) fmt::print(stderr, "cuprobe {}: note: {}\n", what, utf8::terminal_safe(w));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "cuprobe {}: wrote {} ({}): {} process{}, {} calls, {} items, {} finding{} in {:.2f} s\n", what,
             c.output, analysis::human_bytes(stats->bytes), stats->processes, stats->processes == 1 ? "" : "es",
             stats->events, stats->items, job.report.findings.size(), job.report.findings.size() == 1 ? "" : "s", s);
  for (const auto& a : stats->aggregated) fmt::print(stderr, "  aggregated: {}\n", a);
  return kExitOk;
}

}  // namespace

int cmd_export(const Args& args) {
  Common c;
  c.analyze.rule_dirs.push_back(analysis::default_rules_dir());
  std::string format = "perfetto";
  OptionParser options(kExportHelp);
  options.value("--format", [&](const std::string& v) {
    if (v != "perfetto" && v != "chrome" && v != "sqlite") {
      throw UsageError(fmt::format("--format {}: not a format; use perfetto, chrome or sqlite", v));
    }
    format = v;
  });
  common_options(options, c);
  if (!options.parse(args, &c.analyze.paths)) return kExitOk;
  if (c.analyze.paths.empty()) throw UsageError("no trace given; usage: cuprobe export --format FORMAT -o FILE PATH...");
  if (c.output.empty()) throw UsageError("-o FILE is required (where to write the export)");
  auto writer = format == "chrome" ? exporter::export_chrome
                : format == "sqlite" ? exporter::export_sqlite
                                     : exporter::export_perfetto;
  return run_writer("export", c, writer);
}

int cmd_report(const Args& args) {
  Common c;
  c.analyze.rule_dirs.push_back(analysis::default_rules_dir());
  c.output = "report.html";
  OptionParser options(kReportHelp);
  common_options(options, c);
  options.value("--compare-with", [&](const std::string& v) { c.compare_with = split_commas(v); });
  if (!options.parse(args, &c.analyze.paths)) return kExitOk;
  if (c.analyze.paths.empty()) throw UsageError("no trace given; usage: cuprobe report -o FILE PATH...");
  return run_writer("report", c, exporter::write_report);
}

}  // namespace cuprobe::cli
