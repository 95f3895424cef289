// `cuprobe analyze`, `rules` and `explain` as users run them: exit codes, the JSON report, the
// same findings from a trace and from its dump piped back in, a job of several processes whose
// searches chose differently, and colour only when asked or on a terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(CUPROBE_TEST_RULES_DIR) + "/fixtures";

json analyze_json(const std::vector<std::string>& args, int expect_status) {
  std::vector<std::string> cmd = {cuprobe_bin(), "analyze", "--json"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  RunResult r = run(cmd);
  EXPECT_EQ(r.status, expect_status) << r.err;
  try {
    return json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << r.out.substr(0, 500) << " " << r.err;
    return json::object();
  }
}

std::set<std::string> rules_of(const json& report) {
  std::set<std::string> s;
  for (const auto& f : report["findings"]) s.insert(f["rule"].get<std::string>());
  return s;
}

TEST(AnalyzeCli, ExitCodesFollowTheFindingsAndTheThreshold) {
  std::string quiet = kFixtures + "/sync-stall/quiet/overlapped.jsonl";
  std::string warning = kFixtures + "/allocation-churn/fire/empty_cache_in_loop.jsonl";
  std::string error = kFixtures + "/oom-postmortem/fire/killed.jsonl";
  EXPECT_EQ(run({cuprobe_bin(), "analyze", quiet}).status, 0);
  EXPECT_EQ(run({cuprobe_bin(), "analyze", warning}).status, 1);
  EXPECT_EQ(run({cuprobe_bin(), "analyze", "--fail-on", "error", warning}).status, 0);
  EXPECT_EQ(run({cuprobe_bin(), "analyze", "--fail-on", "error", error}).status, 1);
  EXPECT_EQ(run({cuprobe_bin(), "analyze", "--fail-on", "info", quiet}).status, 0);

  RunResult missing = run({cuprobe_bin(), "analyze", "/nonexistent/run"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("/nonexistent/run: no such file or directory"), std::string::npos) << missing.err;
  RunResult usage = run({cuprobe_bin(), "analyze", "--fail-on", "bad", quiet});
  EXPECT_EQ(usage.status, 2);
  EXPECT_NE(usage.err.find("unknown severity 'bad'"), std::string::npos) << usage.err;
  RunResult set = run({cuprobe_bin(), "analyze", "--set", "sync-stall.nope=1", quiet});
  EXPECT_EQ(set.status, 2);
  EXPECT_NE(set.err.find("has no parameter 'nope'"), std::string::npos) << set.err;
  std::string junk = fresh_dir("junk") + "/bad.jsonl";
  // A line that is not JSON is skipped and named; the rest is analyzed (and the damage is a
  // trace-integrity finding).
  std::ofstream(junk) << "{\"type\":\"call\",\"api\":\"cudaMalloc\"}\nnot json\n";
  RunResult bad = run({cuprobe_bin(), "analyze", junk});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("line 2: not JSON"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("trace-integrity"), std::string::npos) << bad.out;
  // Nothing usable at all: exit 2, naming the first bad line.
  std::ofstream(junk) << "{\"type\":\"call\",\"api\":\"cudaMalloc\",\"pid\":-5}\nnot json\n";
  RunResult none = run({cuprobe_bin(), "analyze", junk});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("\"pid\": -5 is not an unsigned 32-bit integer"), std::string::npos) << none.err;
}

TEST(AnalyzeCli, JsonReportHasTheDocumentedShape) {
  json r = analyze_json({kFixtures + "/research-storm/fire/random_sizes.jsonl"}, 1);
  ASSERT_TRUE(r.contains("summary"));
  ASSERT_TRUE(r.contains("findings"));
  EXPECT_EQ(r["summary"]["processes"], 1);
  EXPECT_GT(r["summary"]["events"].get<uint64_t>(), 100u);
  ASSERT_FALSE(r["findings"].empty());
  const json& f = r["findings"][0];
  for (const char* key : {"rule", "severity", "title", "message", "evidence", "problems", "pids", "fix"}) {
    EXPECT_TRUE(f.contains(key)) << key;
  }
  EXPECT_EQ(f["rule"], "research-storm");
  EXPECT_EQ(f["evidence"]["distinct_shapes"].get<int>(), f["evidence"]["late_searches"].get<int>());
  EXPECT_NE(f["message"].get<std::string>().find("spatial size varies"), std::string::npos) << f["message"];
}

TEST(AnalyzeCli, DumpPipedBackGivesTheSameFindings) {
  std::string dir = fresh_dir("analyze-pipe");
  RunResult rec = record(dir, {program("frontend_search"), "--benchmark", "--bwd", "--shapes", "8", "--repeat", "2"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  json direct = analyze_json({dir}, 1);
  RunResult piped = run({"/bin/sh", "-c", cuprobe_bin() + " dump " + dir + " | " + cuprobe_bin() + " analyze --json -"});
  EXPECT_EQ(piped.status, 1) << piped.err;
  json via = json::parse(piped.out);
  ASSERT_FALSE(direct["findings"].empty());
  EXPECT_EQ(direct["findings"], via["findings"]);
  EXPECT_EQ(direct["summary"]["events"], via["summary"]["events"]);
  EXPECT_TRUE(rules_of(direct).count("research-repeat"));
}

TEST(AnalyzeCli, DifferentWinnersOnTwoProcessesAreDivergence) {
  std::string a = fresh_dir("diverge-a"), b = fresh_dir("diverge-b");
  // Engine 7 is fastest on one "GPU", engine 3 on the other.
  RunResult ra = record(a, {program("frontend_search"), "--benchmark", "--steps", "5"},
                        {{"FAKECUDNN_ENGINE_US", "7:20,3:400,0:600,5:600,9:600,1:600,11:600,2:600"}});
  RunResult rb = record(b, {program("frontend_search"), "--benchmark", "--steps", "5"},
                        {{"FAKECUDNN_ENGINE_US", "7:400,3:20,0:600,5:600,9:600,1:600,11:600,2:600"}});
  ASSERT_EQ(ra.status, 0) << ra.err;
  ASSERT_EQ(rb.status, 0) << rb.err;
  json r = analyze_json({a, b}, 1);
  EXPECT_EQ(r["summary"]["processes"], 2);
  const json* div = nullptr;
  for (const auto& f : r["findings"]) {
    if (f["rule"] == "algo-divergence") div = &f;
  }
  ASSERT_NE(div, nullptr) << r.dump(2);
  EXPECT_EQ((*div)["evidence"]["diverging"], 1);
  EXPECT_EQ((*div)["evidence"]["engine_level"], 1);
  EXPECT_EQ((*div)["severity"], "warning");  // a clear measured gap between the two engines
  // One process alone diverges from nothing.
  EXPECT_FALSE(rules_of(analyze_json({a}, 0)).count("algo-divergence"));
}

TEST(AnalyzeCli, ColourOnlyWhenAskedOffATerminal) {
  std::string fire = kFixtures + "/allocation-churn/fire/empty_cache_in_loop.jsonl";
  RunResult plain = run({cuprobe_bin(), "analyze", fire});
  EXPECT_EQ(plain.out.find("\033["), std::string::npos);
  EXPECT_NE(plain.out.find("allocation-churn"), std::string::npos);
  EXPECT_NE(plain.out.find("fix:"), std::string::npos);
  RunResult colour = run({cuprobe_bin(), "analyze", "--color", fire});
  EXPECT_NE(colour.out.find("\033["), std::string::npos);
}

TEST(AnalyzeCli, RulesAndExplain) {
  RunResult list = run({cuprobe_bin(), "rules"});
  EXPECT_EQ(list.status, 0);
  for (const char* id : {"research-storm", "research-repeat", "workspace-blowup", "algo-divergence", "oom-postmortem",
                         "unsupported-config", "allocation-churn", "sync-stall"}) {
    EXPECT_NE(list.out.find(id), std::string::npos) << id;
  }
  RunResult explain = run({cuprobe_bin(), "explain", "workspace-blowup"});
  EXPECT_EQ(explain.status, 0);
  EXPECT_NE(explain.out.find("alternative_ratio"), std::string::npos);
  EXPECT_NE(explain.out.find("What to do"), std::string::npos);
  RunResult unknown = run({cuprobe_bin(), "explain", "nope"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("no rule 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace cuprobe::test
