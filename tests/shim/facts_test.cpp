// `cuprobe facts` (issue 30): the per-node reduction. Analysis of a facts file gives the findings
// and summaries analysis of the traces gives (every rule fixture; binary traces with call sites,
// out-of-memory failures, faults, a crash and damage); facts files merge, keep apart processes
// whose pids repeat across machines, and a facts file of another version is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(CUPROBE_TEST_RULES_DIR) + "/fixtures";

RunResult facts(const std::string& out, const std::vector<std::string>& inputs) {
  std::vector<std::string> argv = {cuprobe_bin(), "facts", "-q", "-o", out};
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  return run(argv);
}

json analyzed(const std::string& path) {
  RunResult a = run({cuprobe_bin(), "analyze", "--json", path});
  EXPECT_NE(a.status, 2) << path << ": " << a.err;
  json j = json::parse(a.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << a.out;
  return j;
}

// Findings and summary as analyze --json gives them (the inputs' paths differ, and are not in either).
void expect_same_analysis(const std::string& traces, const std::string& facts_file) {
  json a = analyzed(traces), b = analyzed(facts_file);
  EXPECT_EQ(a["findings"], b["findings"]) << traces;
  EXPECT_EQ(a["summary"], b["summary"]) << traces;
  EXPECT_FALSE(a["findings"].is_null());
}

TEST(FactsFiles, EveryFixtureAnalyzesTheSameFromItsFacts) {
  std::string dir = fresh_dir("facts-fixtures");
  int n = 0, with_findings = 0;
  for (const auto& e : fs::recursive_directory_iterator(kFixtures)) {
    if (e.path().extension() != ".jsonl") continue;
    std::string out = dir + "/" + std::to_string(n++) + ".facts";
    RunResult f = facts(out, {e.path().string()});
    ASSERT_EQ(f.status, 0) << e.path() << ": " << f.err;
    expect_same_analysis(e.path().string(), out);
    with_findings += !analyzed(out)["findings"].empty();
  }
  EXPECT_GE(n, 70);  // every rule's fire and quiet fixtures
  EXPECT_GE(with_findings, n / 3);
}

TEST(FactsFiles, BinaryTracesWithCallSitesFailuresAndDamage) {
  std::string run_dir = fresh_dir("facts-run") + "/run";
  ASSERT_EQ(record(run_dir, {program("stack_chain")}, {},
                   {"-q", "--stacks", "all", "--mem-cap", "6MiB", "--fault", "alloc:OOM,nth=3"})
                .status,
            0);
  ASSERT_EQ(record(run_dir, {program("frontend_search"), "--benchmark", "--shapes", "8", "--repeat", "3"}, {},
                   {"-q", "--append"})
                .status,
            0);
  record(run_dir, {program("crasher"), "abort"}, {}, {"-q", "--append"});
  // A damaged copy of the search trace: a stretch of one chunk overwritten.
  std::string damaged = fresh_dir("facts-damaged");
  for (const auto& e : fs::directory_iterator(run_dir)) {
    std::string name = e.path().filename().string();
    fs::copy_file(e.path(), damaged + "/" + name);
  }
  for (const auto& e : fs::directory_iterator(damaged)) {
    if (fs::file_size(e.path()) < 3 * 65536) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(65536 + 2048);  // records of the first chunk
    f << std::string(512, '\x7f');
  }
  for (const std::string& input : {run_dir, damaged}) {
    std::string out = fresh_dir("facts-out") + "/node.facts";
    RunResult f = facts(out, {input});
    ASSERT_EQ(f.status, 0) << f.err;
    expect_same_analysis(input, out);
    // Text too: the call sites resolved on the node are the ones analyze shows from the traces.
    // Notes about the traces' damage name the trace, after the facts file they were read from.
    RunResult a = run({cuprobe_bin(), "analyze", input}), b = run({cuprobe_bin(), "analyze", out});
    auto findings_text = [](const std::string& text) {
      std::string kept;
      size_t at = 0;
      for (size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
        std::string line = text.substr(at, nl - at);
        if (line.rfind("  note: ", 0) != 0) kept += line + "\n";
      }
      return kept;
    };
    EXPECT_EQ(findings_text(a.out), findings_text(b.out));
    if (input == damaged) {
      EXPECT_NE(a.out.find("trace-integrity"), std::string::npos) << a.out;
      EXPECT_NE(b.out.find("  note: " + out + ": " + damaged + "/"), std::string::npos) << b.out;
    }
    // plans export gives the same plans.
    std::string pa = fresh_dir("facts-plans") + "/a.json", pb = fresh_dir("facts-plans") + "/b.json";
    RunResult ea = run({cuprobe_bin(), "plans", "export", "-q", "-o", pa, input});
    RunResult eb = run({cuprobe_bin(), "plans", "export", "-q", "-o", pb, out});
    ASSERT_EQ(ea.status, 0) << ea.err;
    ASSERT_EQ(eb.status, 0) << eb.err;
    json ja = json::parse(std::ifstream(pa)), jb = json::parse(std::ifstream(pb));
    for (json* j : {&ja, &jb}) {
      for (auto& p : (*j)["plans"]) p["from"].erase("run");  // what was read: the run, or the facts file
    }
    EXPECT_TRUE(ja["plans"] == jb["plans"]);
    EXPECT_FALSE(ja["plans"].empty());
  }
  // The facts are a small part of the traces.
  std::string out = fresh_dir("facts-size") + "/node.facts";
  ASSERT_EQ(facts(out, {run_dir}).status, 0);
  uint64_t traces = 0;
  for (const auto& e : fs::directory_iterator(run_dir)) traces += fs::file_size(e.path());
  EXPECT_LT(fs::file_size(out) * 20, traces) << fs::file_size(out) << " of " << traces;
  // A timeline from facts says what it lacks.
  std::string pf = fresh_dir("facts-export") + "/t.json";
  RunResult x = run({cuprobe_bin(), "export", "--format", "chrome", "-o", pf, out});
  EXPECT_EQ(x.status, 0) << x.err;
  EXPECT_NE(x.err.find("a facts file: its processes, findings and summaries are here, not their calls"),
            std::string::npos)
      << x.err;
}

// Issue 30's "test at 1,024": a job of 1,024 ranks (8 node directories of 128), each a cuDNN
// benchmark search on the doubles, rank 17 with more problems than the others; the facts of each
// node give the findings and summary of the traces, and the text report stays short and names the
// outlier.
TEST(FactsFiles, AThousandRanksAnalyzeTheSameFromTheirFacts) {
  // Sanitizer builds run every process several times slower: 128 ranks there, the full job in
  // the normal build.
  const bool sanitized = CUPROBE_SANITIZED || CUPROBE_THREAD_SANITIZED;
  const int kRanks = sanitized ? 128 : 1024, kPerNode = sanitized ? 16 : 128;
  std::string job = fresh_dir("facts-1024");
  std::atomic<int> next{0}, failed{0};
  auto work = [&] {
    for (int r; (r = next.fetch_add(1)) < kRanks;) {
      std::string node = job + "/node" + std::to_string(r / kPerNode);
      RunResult x = run({program("frontend_search"), "--benchmark", "--shapes", r == 17 ? "3" : "2", "--steps", "1"},
                        shim_env({{"LD_PRELOAD", shim_preload()},
                                  {"CUPROBE_OUT", node},
                                  {"CUPROBE_QUIET", "1"},
                                  {"RANK", std::to_string(r)},
                                  {"WORLD_SIZE", std::to_string(kRanks)}}));
      if (x.status != 0) failed.fetch_add(1);
    }
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < 4; ++w) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  ASSERT_EQ(failed.load(), 0);
  std::vector<std::string> nodes, facts_files;
  std::string facts_dir = fresh_dir("facts-1024-out");
  for (int n = 0; n < kRanks / kPerNode; ++n) {
    nodes.push_back(job + "/node" + std::to_string(n));
    RunResult f = facts(facts_dir + "/node" + std::to_string(n) + ".facts", {nodes.back()});
    ASSERT_EQ(f.status, 0) << f.err;
  }
  std::vector<std::string> argv = {cuprobe_bin(), "analyze", "--json"};
  argv.insert(argv.end(), nodes.begin(), nodes.end());
  json a = json::parse(run(argv).out), b = analyzed(facts_dir);
  EXPECT_EQ(a["summary"]["processes"], kRanks);
  EXPECT_TRUE(a["findings"] == b["findings"]);
  EXPECT_TRUE(a["summary"] == b["summary"]);
  RunResult text = run({cuprobe_bin(), "analyze", "--no-color", facts_dir});
  EXPECT_LE(std::count(text.out.begin(), text.out.end(), '\n'), 60) << text.out;
  EXPECT_NE(text.out.find(
                fmt::format("{} of {} processes alike (ranks 0-16, 18-{} on 1 host)", kRanks - 1, kRanks, kRanks - 1)),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("1 outlier (each against the processes alike):"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("3 searches (others: 2); 1 problem the others did not have"), std::string::npos) << text.out;
}

TEST(FactsFiles, MergedFactsKeepProcessesWhosePidsRepeat) {
  // The same processes reduced on "two nodes": the same pids twice, as containers give.
  std::string fixture = kFixtures + "/research-storm/fire";
  std::string dir = fresh_dir("facts-merge");
  ASSERT_EQ(facts(dir + "/a.facts", {fixture}).status, 0);
  ASSERT_EQ(facts(dir + "/b.facts", {fixture}).status, 0);
  int one = analyzed(dir + "/a.facts")["summary"]["processes"];
  ASSERT_GT(one, 0);
  EXPECT_EQ(analyzed(dir)["summary"]["processes"], 2 * one);  // a directory of facts files
  std::string merged = fresh_dir("facts-merged") + "/all.facts";
  RunResult m = facts(merged, {dir + "/a.facts", dir + "/b.facts"});
  ASSERT_EQ(m.status, 0) << m.err;
  json all = analyzed(merged);
  EXPECT_EQ(all["summary"]["processes"], 2 * one);
  EXPECT_EQ(all["findings"].size(), analyzed(dir)["findings"].size());
}

TEST(FactsFiles, OtherVersionsAndBadCommandLinesAreRefused) {
  std::string dir = fresh_dir("facts-version");
  ASSERT_EQ(run({cuprobe_bin(), "facts", "-q", "-o", dir + "/v.facts", kFixtures + "/sync-stall/fire"}).status, 0);
  // Unpacked and the version changed, as a future cuprobe would write it.
  RunResult d = run({"sh", "-c",
                     "zstd -dc " + dir +
                         "/v.facts | sed 's/\"key\":\"version\",\"value\":1/\"key\":\"version\",\"value\":99/' > " +
                         dir + "/v99.jsonl"});
  ASSERT_EQ(d.status, 0) << d.err;
  RunResult a = run({cuprobe_bin(), "analyze", dir + "/v99.jsonl"});
  EXPECT_EQ(a.status, 2);
  EXPECT_NE(a.err.find("facts of version 99; this cuprobe reads version 1: run `cuprobe facts` of this version"),
            std::string::npos)
      << a.err;

  RunResult no_out = run({cuprobe_bin(), "facts", dir});
  EXPECT_EQ(no_out.status, 2);
  EXPECT_NE(no_out.err.find("no output file; give -o FILE"), std::string::npos) << no_out.err;
  RunResult nothing = run({cuprobe_bin(), "facts", "-o", dir + "/x.facts", "/no/such/run"});
  EXPECT_EQ(nothing.status, 2);
  EXPECT_NE(nothing.err.find("/no/such/run: no such file or directory"), std::string::npos) << nothing.err;
  EXPECT_FALSE(fs::exists(dir + "/x.facts"));
  // %h: the host name, for one command line run on every node.
  RunResult h = run({cuprobe_bin(), "facts", "-q", "-o", dir + "/new/%h.facts", kFixtures + "/sync-stall/fire"});
  ASSERT_EQ(h.status, 0) << h.err;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_TRUE(fs::exists(dir + "/new/" + host + ".facts"));
  EXPECT_EQ(fs::status(dir + "/new").permissions() & fs::perms::all, fs::perms::owner_all);
}

}  // namespace
}  // namespace cuprobe::test
