// Plan pinning (issue 16, docs/plan-pinning.md) on the cuDNN test double: plans exported from one
// run and replayed in another end every selection path (cudnn-frontend's benchmark search, its
// heuristic pick, the legacy Find/Get path) on the pinned plan after one candidate, even where the
// run on its own would choose another; a pinned engine that is missing or fails makes the shim step
// aside and the program runs as without pinning; problems outside the file are left alone; plan
// files merge, learn and are checked.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "support/frontend_search.h"
#include "support/run.h"

namespace cuprobe::test {
namespace {

using nlohmann::json;

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

RunResult export_plans(const std::string& file, const std::vector<std::string>& runs, bool merge = false) {
  std::vector<std::string> cmd = {cuprobe_bin(), "plans", "export", "-q", "-o", file};
  if (merge) cmd.push_back("--merge");
  cmd.insert(cmd.end(), runs.begin(), runs.end());
  return run(cmd);
}

const std::vector<std::string> kSearch = {"--benchmark", "--bwd", "--shapes", "2"};
// Engine 5 is fastest with this; without it the double's own times make engine 0 the winner.
const Env kEngine5Fast = {{"FAKECUDNN_ENGINE_US", "5:5"}};

// A plan file of engine-5 winners (6 problems: 2 shapes x 3 directions).
std::string engine5_plans() {
  std::string dir = fresh_dir("pin-src");
  RunResult r = record(dir, [] {
    std::vector<std::string> a = {program("frontend_search")};
    a.insert(a.end(), kSearch.begin(), kSearch.end());
    return a;
  }(), kEngine5Fast);
  EXPECT_EQ(r.status, 0) << r.err;
  for (const Pick& p : picks(r.out)) EXPECT_EQ(p.winner, 5);
  std::string file = dir + "/plans.json";
  RunResult e = export_plans(file, {dir});
  EXPECT_EQ(e.status, 0) << e.err;
  return file;
}

std::vector<std::string> search_cmd(std::vector<std::string> extra) {
  std::vector<std::string> a = {program("frontend_search")};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(PlanPinning, ExportWritesEachProblemsWinnerWithItsPin) {
  std::string file = engine5_plans();
  json doc = json::parse(read(file));
  EXPECT_EQ(doc["format"], "cuprobe-plans/1");
  ASSERT_EQ(doc["plans"].size(), 6u) << doc.dump(1);
  for (const auto& p : doc["plans"]) {
    EXPECT_EQ(p["engine"], 5);
    EXPECT_EQ(p["api"], "backend");
    EXPECT_EQ(p["mode"], "benchmark");
    EXPECT_EQ(p["gpu"], "cuprobe test double");
    EXPECT_EQ(p["cudnn"], 91900);
    EXPECT_EQ(p["align"], 16);
    EXPECT_GT(p["time_ms"].get<double>(), 0);
    EXPECT_GT(p["search_ms"].get<double>(), 0);
    EXPECT_EQ(p["candidates"], 8);
    std::string pin = p["pin"];
    EXPECT_NE(pin.find("e=5 "), std::string::npos) << pin;
    EXPECT_NE(pin.find("k=" + p["knobs"].get<std::string>()), std::string::npos) << pin;
  }
  RunResult show = run({cuprobe_bin(), "plans", "show", file});
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("6 plans for cuprobe test double with cuDNN 9.19.0"), std::string::npos) << show.out;
}

// The finalize calls plan pinning failed fast (each checked: NOT_SUPPORTED, another engine, no stack).
int failed_fast(const std::vector<json>& lines, int pinned_engine) {
  int rejected = 0;
  for (const auto& c : of_type(lines, "call", "cudnnBackendFinalize")) {
    if (!c.contains("pinned")) continue;
    ++rejected;
    EXPECT_EQ(c["ret"], 3000);
    EXPECT_NE(c["engine"], pinned_engine);
    EXPECT_FALSE(c.contains("stack")) << "candidates failed fast carry no stack";
  }
  return rejected;
}

// Heuristics queries (not counting queries) the shim answered itself, each with one configuration.
int answered_queries(const std::vector<json>& lines) {
  int n = 0;
  for (const auto& c : of_type(lines, "call", "cudnnBackendGetAttribute")) {
    if (!c.contains("pinned")) continue;
    ++n;
    EXPECT_EQ(c["ret"], 0) << c.dump();
    EXPECT_EQ(c["count"], 1) << c.dump();
  }
  return n;
}

TEST(PlanPinning, BenchmarkAndHeuristicSelectionsEndOnThePinnedPlanAfterOneCandidate) {
  std::string file = engine5_plans();
  for (bool benchmark : {true, false}) {
    for (bool fallback : {false, true}) {
      SCOPED_TRACE(std::string(benchmark ? "benchmark" : "heuristic") + (fallback ? " with fallback list" : ""));
      std::vector<std::string> args = {"--bwd", "--shapes", "2"};
      if (benchmark) args.insert(args.begin(), "--benchmark");
      if (fallback) args.push_back("--fallback");
      // On its own the run picks another engine: pinning is what makes it 5.
      RunResult plain = record(fresh_dir("pin-plain"), search_cmd(args));
      ASSERT_EQ(plain.status, 0) << plain.err;
      for (const Pick& p : picks(plain.out)) {
        EXPECT_NE(p.winner, 5);
        EXPECT_GT(p.candidates, 1);
      }
      std::string dir = fresh_dir("pin-run");
      RunResult r = record(dir, search_cmd(args), {}, {"--pin-plans", file});
      ASSERT_EQ(r.status, 0) << r.err;
      auto got = picks(r.out);
      ASSERT_EQ(got.size(), 6u) << r.out;
      for (const Pick& p : got) {
        EXPECT_EQ(p.winner, 5) << p.kind << " " << p.batch;
        EXPECT_EQ(p.candidates, 1) << p.kind << " " << p.batch;
      }
      auto lines = dump(dir);
      auto pins = of_type(lines, "pin");
      ASSERT_EQ(pins.size(), 6u);
      for (const auto& p : pins) {
        EXPECT_EQ(p["outcome"], "pinned") << p.dump();
        EXPECT_EQ(p["engine"], 5);
        EXPECT_EQ(p.value("answered", false), true) << p.dump();
      }
      // cuDNN's heuristics did not run for any selection: the shim answered with the pinned
      // configuration; the fallback list (asked of cuDNN) is failed fast after it.
      EXPECT_EQ(answered_queries(lines), 6);
      EXPECT_EQ(failed_fast(lines, 5), fallback ? 6 * 3 : 0);
      json a = analyze_json({dir});
      EXPECT_TRUE(a["findings"].empty()) << a["findings"].dump(1);
      json pinning = a["summary"]["per_process"][0]["pinning"];
      EXPECT_EQ(pinning["pinned"], 6);
      EXPECT_EQ(pinning["heuristics_answered"], 6);
      EXPECT_EQ(pinning["plans_in_file"], 6);
      EXPECT_TRUE(pinning["stepped_aside"].empty());
    }
  }
}

TEST(PlanPinning, ThreadsSelectingAtOnceAreEachPinned) {
  // Four threads, each with its own handle, select the same problems at once: every selection is
  // answered and pinned, and the shim's descriptors go with the configurations they filled.
  std::string file = engine5_plans();
  std::string dir = fresh_dir("pin-threads");
  RunResult r = record(dir, search_cmd({"--benchmark", "--bwd", "--shapes", "2", "--fallback", "--threads", "4"}),
                       {{"FAKECUDNN_REPORT_LIVE", "1"}}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err;
  // The program destroys every descriptor it made; the shim's went with the configurations.
  EXPECT_NE(r.err.find("fakecudnn: 0 backend descriptors alive"), std::string::npos) << r.err;
  auto got = picks(r.out);
  ASSERT_EQ(got.size(), 24u) << r.out;
  for (const Pick& p : got) {
    EXPECT_EQ(p.winner, 5);
    EXPECT_EQ(p.candidates, 1);
  }
  auto lines = dump(dir);
  EXPECT_EQ(answered_queries(lines), 24);
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 24u);
  std::set<int> tids;
  for (const auto& p : pins) {
    EXPECT_EQ(p["outcome"], "pinned");
    tids.insert(p["tid"].get<int>());
  }
  EXPECT_EQ(tids.size(), 4u);
}

TEST(PlanPinning, ARuntimeCompiledEngineIsPinnedByFailingTheOtherCandidates) {
  // Engines from 8 up carry the double's runtime-compilation note: the shim does not build their
  // plans to answer heuristics (that would compile twice) and steers by failing candidates fast.
  std::string src = fresh_dir("pin-rtc-src");
  RunResult r0 = record(src, search_cmd(kSearch), {{"FAKECUDNN_ENGINE_US", "9:5"}});
  ASSERT_EQ(r0.status, 0) << r0.err;
  for (const Pick& p : picks(r0.out)) ASSERT_EQ(p.winner, 9);
  std::string file = src + "/plans.json";
  ASSERT_EQ(export_plans(file, {src}).status, 0);
  std::string dir = fresh_dir("pin-rtc");
  RunResult r = record(dir, search_cmd(kSearch), {}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = picks(r.out);
  ASSERT_EQ(got.size(), 6u) << r.out;
  for (const Pick& p : got) {
    EXPECT_EQ(p.winner, 9);
    EXPECT_EQ(p.candidates, 1);
  }
  auto lines = dump(dir);
  EXPECT_EQ(answered_queries(lines), 0);
  // Heuristics rank engine 9 fifth: the four before it are failed fast, the rest after it.
  EXPECT_EQ(failed_fast(lines, 9), 6 * 7);
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 6u);
  for (const auto& p : pins) {
    EXPECT_EQ(p["outcome"], "pinned");
    EXPECT_FALSE(p.contains("answered"));
  }
}

TEST(PlanPinning, APinnedPlanTheApplicationFiltersOutIsLeftAloneForTheRestOfTheRun) {
  // The application drops engine 5's configurations (as PyTorch drops nondeterministic ones once
  // deterministic algorithms are asked for): the answered query leaves it the fallback list, the
  // selection steps aside as skipped, and the problem's later selections are left alone from the
  // start (cuDNN's heuristics run, nothing is failed fast).
  std::string file = engine5_plans();
  std::vector<std::string> args = {"--benchmark", "--bwd", "--shapes", "2", "--fallback", "--skip-engine", "5",
                                   "--repeat", "2"};
  RunResult plain = record(fresh_dir("pin-filter-plain"), search_cmd(args));
  ASSERT_EQ(plain.status, 0) << plain.err;
  std::string dir = fresh_dir("pin-filter");
  RunResult r = record(dir, search_cmd(args), {}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = picks(r.out), own = picks(plain.out);
  ASSERT_EQ(got.size(), 12u) << r.out;
  ASSERT_EQ(own.size(), 12u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NE(got[i].winner, 5);
    if (i >= 6) {  // the second round chooses exactly as without a plan file
      EXPECT_EQ(got[i].winner, own[i].winner) << i;
      EXPECT_EQ(got[i].candidates, own[i].candidates) << i;
    }
  }
  auto lines = dump(dir);
  EXPECT_EQ(answered_queries(lines), 6) << "only the first round's queries are answered";
  EXPECT_EQ(failed_fast(lines, 5), 0);
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 12u);
  for (const auto& p : pins) EXPECT_EQ(p["outcome"], "skipped") << p.dump();
}

TEST(PlanPinning, LegacyFindAndGetEndOnThePinnedAlgorithm) {
  std::string src = fresh_dir("pin-legacy-src");
  RunResult r0 = record(src, {program("legacy_conv")});
  ASSERT_EQ(r0.status, 0) << r0.err;
  ASSERT_NE(r0.out.find("legacy fwd algo=6"), std::string::npos) << r0.out;
  std::string file = src + "/plans.json";
  ASSERT_EQ(export_plans(file, {src}).status, 0);
  // Pin algorithm 2 (one the double's Find ranks lower) instead of the winner 6.
  std::string text = std::regex_replace(read(file), std::regex(" e=6 "), " e=2 ");
  write(file, text);
  std::string dir = fresh_dir("pin-legacy");
  RunResult r = record(dir, {program("legacy_conv")}, {}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* d : {"fwd", "bwd_data", "bwd_filter"}) {
    EXPECT_NE(r.out.find(std::string("legacy ") + d + " algo=2 "), std::string::npos) << r.out;
  }
  auto lines = dump(dir);
  // The Find calls were answered with the pinned algorithm alone (no search ran).
  for (const char* api : {"cudnnFindConvolutionForwardAlgorithmEx", "cudnnFindConvolutionBackwardDataAlgorithmEx",
                          "cudnnFindConvolutionBackwardFilterAlgorithmEx"}) {
    auto calls = of_type(lines, "call", api);
    ASSERT_EQ(calls.size(), 1u) << api;
    EXPECT_EQ(calls[0]["returned"], 1) << calls[0].dump();
    EXPECT_EQ(calls[0]["best"], 2);
    EXPECT_TRUE(calls[0].contains("pinned"));
  }
  // The heuristic queries' answers put it first (the record keeps cuDNN's own order).
  for (const char* d : {"fwd", "bwd_data", "bwd_filter"}) {
    EXPECT_NE(r0.out.find(std::string("legacy ") + d + " heuristic_first=1"), std::string::npos) << r0.out;
    EXPECT_NE(r.out.find(std::string("legacy ") + d + " heuristic_first=2"), std::string::npos) << r.out;
  }
  auto gets = of_type(lines, "call", "cudnnGetConvolutionForwardAlgorithm_v7");
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0]["best"], 1);
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 6u);
  for (const auto& p : pins) EXPECT_EQ(p["outcome"], "pinned");
}

TEST(PlanPinning, AMissingOrFailingPinnedEngineStepsAside) {
  std::string file = engine5_plans();
  // Engine 5 does not exist: heuristics never offer it, nothing is failed, the run picks its own.
  std::string gone = fresh_dir("pin-gone");
  RunResult r = record(gone, search_cmd(kSearch), {{"FAKECUDNN_ENGINES", "5"}}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const Pick& p : picks(r.out)) {
    EXPECT_NE(p.winner, 5);
    EXPECT_GT(p.candidates, 1);
  }
  auto lines = dump(gone);
  for (const auto& c : of_type(lines, "call")) EXPECT_FALSE(c.contains("pinned")) << c.dump();
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 6u);
  for (const auto& p : pins) EXPECT_EQ(p["outcome"], "not-offered");
  json a = analyze_json({gone});
  ASSERT_EQ(a["findings"].size(), 1u) << a["findings"].dump(1);
  EXPECT_EQ(a["findings"][0]["rule"], "plan-pinning");
  EXPECT_EQ(a["findings"][0]["evidence"]["by_reason"]["not-offered"], 6);

  // Engine 5 is offered but fails to build: the candidates after it are let through and the
  // program still finds a plan for every problem; later selections are not steered again.
  std::string fails = fresh_dir("pin-fails");
  r = record(fails, search_cmd(kSearch), {{"FAKECUDNN_UNSUPPORTED_ENGINES", "5"}}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  auto got = picks(r.out);
  EXPECT_EQ(got.size(), 6u) << r.out;
  for (const Pick& p : got) EXPECT_NE(p.winner, 5);
  pins = of_type(dump(fails), "pin");
  std::set<std::string> outcomes;
  for (const auto& p : pins) outcomes.insert(p["outcome"]);
  EXPECT_TRUE(outcomes.count("pinned-failed")) << json(pins).dump(1);
  EXPECT_FALSE(outcomes.count("pinned"));
}

TEST(PlanPinning, ProblemsOutsideTheFileAndOtherGpusAreLeftAlone) {
  std::string src = fresh_dir("pin-one-shape");
  RunResult r0 = record(src, search_cmd({"--benchmark", "--bwd"}), kEngine5Fast);  // batch 8 only
  ASSERT_EQ(r0.status, 0) << r0.err;
  std::string file = src + "/plans.json";
  ASSERT_EQ(export_plans(file, {src}).status, 0);
  std::string dir = fresh_dir("pin-two-shapes");
  RunResult r = record(dir, search_cmd(kSearch), {}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const Pick& p : picks(r.out)) {
    if (p.batch == 8) {
      EXPECT_EQ(p.winner, 5);
      EXPECT_EQ(p.candidates, 1);
    } else {
      EXPECT_NE(p.winner, 5);
      EXPECT_EQ(p.candidates, 8) << "nothing is failed for a problem outside the file";
    }
  }
  auto lines = dump(dir);
  for (const auto& c : of_type(lines, "call", "cudnnBackendFinalize")) {
    if (c.contains("pinned")) EXPECT_NE(c["problem"].get<std::string>().find("[8,"), std::string::npos) << c.dump();
  }
  EXPECT_EQ(of_type(lines, "pin").size(), 3u);
  json analysis = analyze_json({dir});
  const json& pinning = analysis["summary"]["per_process"][0]["pinning"];
  EXPECT_EQ(pinning["pinned"], 3);
  EXPECT_EQ(pinning["not_in_file"], 3) << pinning.dump(1);

  // The same file for another GPU model: every selection steps aside, the run picks its own.
  std::string other = std::regex_replace(read(file), std::regex(" g=[0-9a-f]{8}"), " g=0badc0de");
  write(file, other);
  std::string og = fresh_dir("pin-other-gpu");
  r = record(og, search_cmd(kSearch), {}, {"--pin-plans", file});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const Pick& p : picks(r.out)) EXPECT_EQ(p.candidates, 8);
  auto pins = of_type(dump(og), "pin");
  ASSERT_EQ(pins.size(), 3u);
  for (const auto& p : pins) EXPECT_EQ(p["outcome"], "other-gpu");
}

TEST(PlanPinning, RunsMergeByMeasuredTimeAndLearningAddsNewProblems) {
  // Engine 5 at 5 us in one run, engine 0 (the double's own fastest, 20 us) in another.
  std::string fast = fresh_dir("pin-merge-a"), slow = fresh_dir("pin-merge-b");
  ASSERT_EQ(record(fast, search_cmd({"--benchmark"}), kEngine5Fast).status, 0);
  ASSERT_EQ(record(slow, search_cmd({"--benchmark"})).status, 0);
  std::string file = fresh_dir("pin-merge") + "/plans.json";
  ASSERT_EQ(export_plans(file, {slow, fast}).status, 0);
  json doc = json::parse(read(file));
  ASSERT_EQ(doc["plans"].size(), 1u);
  EXPECT_EQ(doc["plans"][0]["engine"], 5);
  ASSERT_EQ(doc["plans"][0]["conflicts"].size(), 1u) << doc.dump(1);
  EXPECT_EQ(doc["plans"][0]["conflicts"][0]["engine"], 0);
  RunResult show = run({cuprobe_bin(), "plans", "show", file});
  EXPECT_NE(show.out.find("conflict: engine 0"), std::string::npos) << show.out;

  // Learning: the file starts with this run's plans, a second run adds its new shape's.
  std::string learned = fresh_dir("pin-learn") + "/plans.json";
  RunResult l1 = record(fresh_dir("pin-learn-1"), search_cmd({"--benchmark"}), {}, {"--pin-plans", learned, "--pin-plans-learn"});
  ASSERT_EQ(l1.status, 0) << l1.err;
  EXPECT_EQ(json::parse(read(learned))["plans"].size(), 1u);
  RunResult l2 = record(fresh_dir("pin-learn-2"), search_cmd({"--benchmark", "--shapes", "2"}), {},
                        {"--pin-plans", learned, "--pin-plans-learn"});
  ASSERT_EQ(l2.status, 0) << l2.err;
  auto got = picks(l2.out);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].candidates, 1) << "the learned problem is pinned";
  EXPECT_EQ(got[1].candidates, 8);
  EXPECT_EQ(json::parse(read(learned))["plans"].size(), 2u);
}

TEST(PlanPinning, BadPlanFilesAreRefusedOrReported) {
  RunResult r = record(fresh_dir("pin-missing"), search_cmd({}), {}, {"--pin-plans", "/nonexistent/plans.json"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--pin-plans /nonexistent/plans.json: no such file"), std::string::npos) << r.err;
  std::string bad = fresh_dir("pin-bad") + "/plans.json";
  write(bad, "{\"plans\": []}");
  r = record(fresh_dir("pin-bad-run"), search_cmd({}), {}, {"--pin-plans", bad});
  EXPECT_EQ(r.status, 2);
  // In the shim's words (record reads the file with the shim's parser).
  EXPECT_NE(r.err.find("plan file " + bad + ": no \"pin\" entries"), std::string::npos) << r.err;
  r = record(fresh_dir("pin-bad-inherited"), search_cmd({}), {{"CUPROBE_PIN_PLANS", bad}});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("CUPROBE_PIN_PLANS in the environment: plan file " + bad + ": no \"pin\" entries"),
            std::string::npos)
      << r.err;
  // Under plain LD_PRELOAD the shim warns, runs the job unchanged and the analysis says so.
  write(bad, "{\"format\": \"cuprobe-plans/1\", \"plans\": [{\"pin\": \"h=zz s=backend e=1\"}]}");
  std::string dir = fresh_dir("pin-bad-preload");
  r = run({program("frontend_search")}, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir},
                                                   {"CUPROBE_PIN_PLANS", bad}}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("CUPROBE_PIN_PLANS=" + bad + ": a \"pin\" string near byte"), std::string::npos) << r.err;
  json a = analyze_json({dir});
  ASSERT_EQ(a["findings"].size(), 1u) << a["findings"].dump(1);
  EXPECT_EQ(a["findings"][0]["rule"], "plan-pinning");
  EXPECT_EQ(a["findings"][0]["evidence"]["plans_in_file"], 0);
  // CUPROBE_QUIET: nothing printed; the analysis still says it.
  std::string quiet = fresh_dir("pin-bad-quiet");
  r = run({program("frontend_search")}, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", quiet},
                                                   {"CUPROBE_PIN_PLANS", bad}, {"CUPROBE_QUIET", "1"}}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("cuprobe:"), std::string::npos) << r.err;
  EXPECT_EQ(analyze_json({quiet})["findings"].size(), 1u);
}

}  // namespace
}  // namespace cuprobe::test
