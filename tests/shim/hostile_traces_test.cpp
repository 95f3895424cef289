// Readers given damaged traces: real traces, recorded under the shim against the test doubles,
// mutated by tests/hostile/mutate_traces.py (header and chunk fields, record sizes and length
// fields, bit flips, truncation, duplicated chunks), then read by `cuprobe dump` and
// `cuprobe analyze --json`. Neither may die of a signal, hang, leave the documented exit statuses
// or print anything but JSON (dump: one object a line; analyze: the report, when it says one
// was written). The bar: no crash and no hang over 1,000 mutated traces.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "support/run.h"
#include "trace/reader.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kTimeoutSeconds = 30;

// Mutants in all: 1000 (the bar); 200 in sanitized builds, where each read costs several
// times more. CUPROBE_HOSTILE_MUTANTS overrides both.
int mutant_count() {
  if (const char* n = std::getenv("CUPROBE_HOSTILE_MUTANTS")) return std::max(1, std::atoi(n));
  return CUPROBE_SANITIZED || CUPROBE_THREAD_SANITIZED ? 200 : 1000;
}

struct Failure {
  std::string category;  // "dump: signal 11", "analyze: exit 3", ...
  std::string detail;
};

// The lines a sanitizer (or a crash) leaves on standard error that say where.
std::string where(const std::string& err) {
  std::istringstream in(err);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("SUMMARY:") != std::string::npos || line.find("runtime error:") != std::string::npos ||
        line.find("terminate called") != std::string::npos || line.find("what():") != std::string::npos ||
        line.find("    #0 ") != std::string::npos || line.find("    #1 ") != std::string::npos ||
        line.find("    #2 ") != std::string::npos) {
      out += "\n    " + line;
    }
  }
  return out.empty() ? "\n    " + err.substr(0, 400) : out;
}

bool sanitizer_report(const std::string& err) {
  return err.find("Sanitizer") != std::string::npos || err.find("runtime error:") != std::string::npos;
}

// `timeout` ends a read that hangs: its status 124 means the time ran out (then KILL 5 s later).
RunResult read_with_timeout(const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {"timeout", "-k", "5", std::to_string(kTimeoutSeconds), cuprobe_bin()};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return run(cmd);
}

// Everything wrong with reading one mutant; empty when nothing is.
std::vector<Failure> check_mutant(const std::string& path) {
  std::vector<Failure> out;
  auto fail = [&](const std::string& cmd, const std::string& what, const RunResult& r) {
    out.push_back({cmd + ": " + what, where(r.err)});
  };
  auto status_problem = [&](const std::string& cmd, const RunResult& r, std::initializer_list<int> allowed) {
    if (r.status == 124 || r.status == 128 + SIGKILL) {
      fail(cmd, "timeout (" + std::to_string(kTimeoutSeconds) + " s)", r);
    } else if (r.status > 128) {
      fail(cmd, "signal " + std::to_string(r.status - 128) + " (" + strsignal(r.status - 128) + ")", r);
    } else if (sanitizer_report(r.err)) {
      fail(cmd, "sanitizer report", r);
    } else if (std::find(allowed.begin(), allowed.end(), r.status) == allowed.end()) {
      fail(cmd, "exit status " + std::to_string(r.status), r);
    } else {
      return false;
    }
    return true;
  };

  RunResult d = read_with_timeout({"dump", path});
  if (!status_problem("dump", d, {0, 2})) {
    std::istringstream in(d.out);
    std::string line;
    while (std::getline(in, line)) {
      if (!json::accept(line)) {
        fail("dump", "a line that is not JSON", d);
        out.back().detail = "\n    " + line.substr(0, 300);
        break;
      }
    }
  }

  RunResult a = read_with_timeout({"analyze", "--json", "--threads", "1", path});
  if (!status_problem("analyze", a, {0, 1, 2})) {
    if (a.status == 2) {
      if (!a.out.empty()) fail("analyze", "output with exit status 2 (no report is written then)", a);
    } else {
      try {
        json report = json::parse(a.out);
        if (report.value("format", "") != "cuprobe-analyze/1" || !report.contains("summary") ||
            !report.contains("findings")) {
          fail("analyze", "a report without format, summary or findings", a);
        }
      } catch (const std::exception& e) {
        fail("analyze", "a report that is not JSON", a);
        out.back().detail = "\n    " + a.out.substr(0, 300) + "\n    " + e.what();
      }
    }
  }
  return out;
}

// mutate_traces.py's manifest: mutant file name -> what was done to it.
std::map<std::string, std::string> read_manifest(const std::string& dir) {
  std::map<std::string, std::string> manifest;
  std::ifstream m(dir + "/manifest.tsv");
  for (std::string line; std::getline(m, line);) {
    size_t tab = line.find('\t');
    if (tab != std::string::npos) manifest[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return manifest;
}

struct Base {
  std::string name;
  std::vector<std::string> argv;
  std::vector<std::string> opts;
};

std::string record_base(const Base& b) {
  std::string dir = fresh_dir("hostile-" + b.name);
  RunResult r = record(dir, b.argv, {}, b.opts);
  auto files = reader::find_trace_files(dir);
  EXPECT_TRUE(files && files->size() == 1) << b.name << ": " << r.err;
  return files && !files->empty() ? files->front() : "";
}

TEST(HostileTraces, MutatedTracesNeitherCrashNorHangTheReaders) {
  // Traces that hold every kind of record: stacks, modules, fault rules and injected calls, the
  // memory cap; cuDNN searches, strings and counts; several chunks per thread; a crash record.
  const std::vector<Base> bases = {
      {"stacks", {program("stack_chain")}, {"--stacks", "all", "--mem-cap", "6MiB", "--fault", "alloc:OOM,nth=3"}},
      {"cudnn", {program("frontend_search"), "--benchmark", "--steps", "2"}, {}},
      {"threads", {program("thread_storm"), "2", "3000"}, {}},
      {"crash", {program("crasher"), "abort"}, {}},
  };
  const std::string kept = fresh_dir("hostile-failed");
  std::vector<std::string> traces;
  for (const auto& b : bases) {
    std::string recorded = record_base(b);
    ASSERT_FALSE(recorded.empty());
    // Kept beside the failed mutants: with the base name as seed, mutate_traces.py makes any again.
    traces.push_back(kept + "/base-" + b.name + ".cuprobe");
    fs::copy_file(recorded, traces.back());
  }

  const int total = mutant_count();
  const int per_base = (total + int(traces.size()) - 1) / int(traces.size());
  const int batch = 50;  // mutants on disk at once, per base trace (each a few hundred KiB)
  const std::string generator = build_path("tests/hostile/mutate_traces.py");
  const unsigned workers = std::max(2u, std::thread::hardware_concurrency());

  std::mutex mu;
  std::map<std::string, std::vector<std::string>> failures;  // category -> examples
  int checked = 0;
  for (size_t t = 0; t < traces.size(); ++t) {
    for (int first = 0; first < per_base; first += batch) {
      int n = std::min(batch, per_base - first);
      std::string dir = fresh_dir("hostile-mutants");
      RunResult g = run({"python3", generator, traces[t], dir, "-n", std::to_string(n), "--first",
                         std::to_string(first), "--seed", bases[t].name});
      ASSERT_EQ(g.status, 0) << g.err;
      std::map<std::string, std::string> manifest = read_manifest(dir);
      ASSERT_EQ(manifest.size(), size_t(n));
      std::vector<std::string> names;
      for (const auto& [name, what] : manifest) names.push_back(name);

      std::atomic<size_t> next{0};
      auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < names.size();) {
          std::string path = dir + "/" + names[i];
          auto found = check_mutant(path);
          std::lock_guard<std::mutex> lock(mu);
          ++checked;
          if (found.empty()) continue;
          // Keep the input that failed, named after its base trace, for the report and for reruns.
          std::string copy = kept + "/" + bases[t].name + "-" + names[i];
          fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
          for (const auto& f : found) {
            failures[f.category].push_back(copy + "  [" + manifest[names[i]] + "]" + f.detail);
          }
        }
      };
      std::vector<std::thread> pool;
      for (unsigned w = 0; w < workers; ++w) pool.emplace_back(work);
      for (auto& th : pool) th.join();
      fs::remove_all(dir);
    }
  }
  EXPECT_GE(checked, total);

  std::ostringstream report;
  size_t failed = 0;
  for (const auto& [category, examples] : failures) {
    failed += examples.size();
    report << "\n" << category << ": " << examples.size() << " mutants, for example:";
    for (size_t i = 0; i < std::min<size_t>(examples.size(), 3); ++i) report << "\n  " << examples[i];
  }
  EXPECT_TRUE(failures.empty()) << failed << " failures over " << checked << " mutated traces (inputs kept in "
                                << kept << "; make one again with tests/hostile/mutate_traces.py " << kept
                                << "/base-BASE.cuprobe DIR -n 1 --first I --seed BASE):" << report.str();
}


// The mutation test of damage (issue 26): one change to what locates records — a byte of a chunk
// header's magic, thread, used size or sequence number, of a record's type or size, of the claimed
// chunk count, a chunk copied over another, the file cut at a chunk boundary. Whenever the analysis
// of the mutant differs from the original's, the trace-integrity finding must say the trace is
// damaged (or the trace is refused outright). Changes to the values inside records (an argument, a
// time, a name) are data the format cannot tell from real data: docs/trace-integrity.md.
std::string normalized_analysis(const std::string& path, bool* integrity, bool* refused) {
  RunResult a = read_with_timeout({"analyze", "--json", "--threads", "1", path});
  *refused = a.status == 2;
  *integrity = false;
  if (a.status != 0 && a.status != 1) return "status " + std::to_string(a.status);
  json report = json::parse(a.out, nullptr, false);
  if (report.is_discarded()) return "not JSON";
  for (const auto& f : report["findings"]) *integrity = *integrity || f.value("rule", "") == "trace-integrity";
  report.erase("warnings");
  std::string text = report.dump();
  for (size_t at; (at = text.find(path)) != std::string::npos;) text.replace(at, path.size(), "TRACE");
  return text;
}

TEST(HostileTraces, StructuralDamageThatChangesTheAnalysisIsAlwaysReported) {
  const std::vector<Base> bases = {
      {"threads", {program("thread_storm"), "3", "4000"}, {}},
      {"cudnn", {program("frontend_search"), "--benchmark", "--steps", "3"}, {}},
  };
  const int per_base = std::max(1, mutant_count() / 4);
  const unsigned workers = std::max(2u, std::thread::hardware_concurrency());
  const std::string generator = build_path("tests/hostile/mutate_traces.py");
  const std::string kept = fresh_dir("structural-silent");
  std::mutex mu;
  std::vector<std::string> silent;
  int changed = 0, checked = 0;
  for (const auto& b : bases) {
    std::string base = kept + "/base-" + b.name + ".cuprobe";
    fs::copy_file(record_base(b), base);
    // The original, read under a mutant's name, is the reference.
    std::string dir = fresh_dir("structural-mutants");
    bool integrity = false, refused = false;
    std::string same = dir + "/reference.cuprobe";
    fs::copy_file(base, same);
    std::string reference = normalized_analysis(same, &integrity, &refused);
    ASSERT_FALSE(integrity) << b.name << ": the undamaged trace has a trace-integrity finding:\n" << reference;
    RunResult g = run({"python3", generator, base, dir, "-n", std::to_string(per_base), "--seed", b.name,
                       "--structural"});
    ASSERT_EQ(g.status, 0) << g.err;
    std::map<std::string, std::string> manifest = read_manifest(dir);
    std::vector<std::string> names;
    for (const auto& [name, what] : manifest) names.push_back(name);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < names.size();) {
        // Under the reference's name, so that paths in the report compare equal.
        std::string path = dir + "/" + names[i];
        bool found = false, refused_here = false;
        std::string got = normalized_analysis(path, &found, &refused_here);
        std::lock_guard<std::mutex> lock(mu);
        ++checked;
        if (got == reference) continue;
        ++changed;
        if (found || refused_here) continue;
        std::string copy = kept + "/" + b.name + "-" + names[i];
        fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
        silent.push_back(copy + "  [" + manifest[names[i]] + "]");
      }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w) pool.emplace_back(work);
    for (auto& th : pool) th.join();
    fs::remove_all(dir);
  }
  EXPECT_GE(checked, 2 * per_base);
  EXPECT_GT(changed, checked / 10) << "the mutations hardly changed anything: the test would not notice silence";
  std::ostringstream report;
  for (size_t i = 0; i < std::min<size_t>(silent.size(), 10); ++i) report << "\n  " << silent[i];
  EXPECT_TRUE(silent.empty()) << silent.size() << " of " << changed << " mutants that changed the analysis (of "
                              << checked << ") have no trace-integrity finding; inputs kept in " << kept << ":"
                              << report.str();
}

}  // namespace
}  // namespace cuprobe::test
