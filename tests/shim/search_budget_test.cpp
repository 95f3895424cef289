// The search budget (issue 29, docs/search-budget.md) on the cuDNN test double: once a layer is
// asked for a second shape and the searches have taken more than the budget of the job's time,
// each new selection ends on cuDNN's heuristic choice after one candidate (backend) or is answered
// with cudnnGet*_v7 (legacy); under the budget, in a job without searches, or before any layer
// changes shape, selections run as usual. The double's searches take almost all of a run's time,
// so a budget of 5% is passed at the first new shape and one of 100% never is.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "support/frontend_search.h"
#include "support/run.h"

namespace cuprobe::test {
namespace {

using nlohmann::json;

std::vector<std::string> search_cmd(std::vector<std::string> extra) {
  std::vector<std::string> a = {program("frontend_search")};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// What the program picks per direction with cudnn.benchmark off (cuDNN's heuristics, the double's
// order): the plan a budgeted selection must end on.
std::map<std::string, int> heuristic_winners(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--bwd"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = run(search_cmd(args));
  EXPECT_EQ(r.status, 0) << r.err;
  std::map<std::string, int> w;
  for (const Pick& p : picks(r.out)) w[p.kind] = p.winner;
  EXPECT_EQ(w.size(), 3u) << r.out;
  return w;
}

const std::vector<std::string> kStorm = {"--benchmark", "--bwd", "--shapes", "4"};
constexpr int kEngineHeurResults = 202;  // CUDNN_ATTR_ENGINEHEUR_RESULTS, as the trace records it

json budget_of(const json& analysis) { return analysis["summary"]["per_process"][0]["search_budget"]; }

TEST(SearchBudget, PastTheBudgetNewShapesTakeTheHeuristicPlanAfterOneCandidate) {
  auto heuristic = heuristic_winners();
  std::string dir = fresh_dir("budget-hit");
  // Each timed run waits 2 ms for the device (the double's synchronizations).
  RunResult r =
      record(dir, search_cmd(kStorm), {{"FAKECUDA_DELAY_US", "cudaEventSynchronize:2000"}}, {"--search-budget", "5%"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = picks(r.out);
  ASSERT_EQ(got.size(), 12u) << r.out;
  int searched = 0, budgeted = 0;
  for (const Pick& p : got) {
    SCOPED_TRACE(p.kind + " batch " + std::to_string(p.batch));
    if (p.batch == 8) {
      // Every layer's first shape is searched in full (the warm-up every benchmark job pays).
      EXPECT_GT(p.candidates, 1);
      ++searched;
    } else {
      EXPECT_EQ(p.candidates, 1);
      EXPECT_EQ(p.winner, heuristic[p.kind]);
      ++budgeted;
    }
  }
  EXPECT_EQ(searched, 3);
  EXPECT_EQ(budgeted, 9);
  auto lines = dump(dir);
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 9u);
  for (const auto& p : pins) {
    EXPECT_EQ(p["outcome"], "budgeted") << p.dump();
    EXPECT_GT(p["search_ms"].get<double>(), 0) << "the search it replaced was expected to cost something";
    EXPECT_GT(p["pinned_ms"].get<double>(), 5) << "the searches' share (percent) when it was decided";
  }
  int failed_fast = 0;
  for (const auto& c : of_type(lines, "call", "cudnnBackendFinalize")) {
    if (!c.contains("pinned")) continue;
    ++failed_fast;
    EXPECT_EQ(c["ret"], 3000);
  }
  EXPECT_GT(failed_fast, 9) << "the candidates after the heuristic choice fail fast";
  json a = analyze_json({dir});
  json b = budget_of(a);
  ASSERT_TRUE(b.is_object()) << a["summary"].dump(1);
  EXPECT_EQ(b["budget_pct"], 5.0);
  EXPECT_EQ(b["budgeted"], 9);
  EXPECT_EQ(b["searches"], 3);
  EXPECT_GT(b["searches_saved_s"].get<double>(), 0);
  // Where choosing them went: the parts add up to the whole, and the double's timing runs make
  // waiting for the device (cudaEventSynchronize, FAKECUDA_DELAY_US below) the largest part.
  const json& parts = b["budgeted_selections_breakdown_s"];
  double sum = 0;
  for (const char* k : {"waiting", "building", "launching", "heuristics", "other"}) {
    ASSERT_TRUE(parts[k].is_number()) << parts;
    EXPECT_GE(parts[k].get<double>(), 0) << k;
    sum += parts[k].get<double>();
  }
  EXPECT_NEAR(sum, b["budgeted_selections_s"].get<double>(), 1e-6) << parts;
  EXPECT_GT(parts["waiting"].get<double>(), 0.5 * b["budgeted_selections_s"].get<double>()) << parts;
  EXPECT_GT(parts["heuristics"].get<double>(), 0) << "the heuristics queries the shim recorded: " << parts;
  EXPECT_NE(b["text"].get<std::string>().find(" waiting for the device in timing runs, "), std::string::npos) << b;
  // The searches that ran were the warm-up: research-storm says the budget kept the storm in check.
  bool info = false;
  for (const auto& f : a["findings"]) {
    EXPECT_NE(f["rule"], "plan-pinning") << "budgeted selections are not pinning's step-asides";
    if (f["rule"] == "research-storm") {
      EXPECT_EQ(f["severity"], "info");
      info = f["message"].get<std::string>().find("search budget 5%") != std::string::npos;
      // Nothing was searched later and choosing took a good part of the run: benchmark off would
      // choose such plans for less if the shapes do not repeat.
      EXPECT_GE(f["evidence"]["choosing_share"].get<double>(), 0.05) << f.dump();
      EXPECT_NE(f["fix"].get<std::string>().find("If these shapes do not repeat, turn torch.backends.cudnn.benchmark off"),
                std::string::npos)
          << f["fix"];
    }
  }
  EXPECT_TRUE(info) << a["findings"].dump(1);
  // The SQLite export marks the budgeted selections.
  std::string db = fresh_dir("budget-sql") + "/t.sqlite";
  ASSERT_EQ(run({cuprobe_bin(), "export", "--format", "sqlite", "-q", "-o", db, dir}).status, 0);
  RunResult q = run({"sqlite3", db, "SELECT steered, count(*) FROM searches GROUP BY steered ORDER BY 1"});
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_EQ(q.out, "|3\nbudgeted|9\n");
}

// cudnn-frontend's benchmark path asks for cuDNN's fallback list too, before it builds a plan. A
// budgeted selection does not need it once one of the ranked configurations builds: the shim
// answers that query with an empty list (the double's ranked list starts with engine 7, which
// builds and which no framework filter drops).
TEST(SearchBudget, TheFallbackListIsNotAskedForWhenARankedPlanBuilds) {
  auto heuristic = heuristic_winners({"--fallback"});
  std::string dir = fresh_dir("budget-no-fallback");
  std::vector<std::string> storm = kStorm;
  storm.push_back("--fallback");
  RunResult r = record(dir, search_cmd(storm), {{"FAKECUDA_DELAY_US", "cudaEventSynchronize:2000"}},
                       {"--search-budget", "5%"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = picks(r.out);
  ASSERT_EQ(got.size(), 12u) << r.out;
  for (const Pick& p : got) {
    if (p.batch == 8) continue;
    EXPECT_EQ(p.candidates, 1) << p.kind << " " << p.batch;
    EXPECT_EQ(p.winner, heuristic[p.kind]) << p.kind << " " << p.batch;
  }
  auto lines = dump(dir);
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 9u);
  for (const auto& p : pins) EXPECT_EQ(p.value("no_fallback", false), true) << p.dump();
  // The fallback queries of the budgeted selections (count, then nothing to fetch) were answered
  // by the shim; the warm-up's went to cuDNN and returned its three configurations.
  int answered = 0, asked = 0;
  for (const auto& c : of_type(lines, "call", "cudnnBackendGetAttribute")) {
    if (c.value("attr", -1) != kEngineHeurResults) continue;
    if (c.contains("pinned")) {
      ++answered;
      EXPECT_EQ(c["count"], 0) << c.dump();
    } else if (c.value("count", -1) == 3) {
      ++asked;
    }
  }
  EXPECT_EQ(answered, 9) << "one count query per budgeted selection";
  EXPECT_GE(asked, 3) << "the warm-up searches' fallback lists";
  EXPECT_EQ(budget_of(analyze_json({dir}))["budgeted_without_fallback"], 9);
}

// When no ranked configuration builds, cuDNN's fallback list is what the selection ends on: the
// shim asks cuDNN for it as usual.
TEST(SearchBudget, TheFallbackListIsAskedForWhenNoRankedPlanBuilds) {
  // Two ranked configurations (engines 7 and 3), both refused; the fallback list is 0, 1, 2.
  const Env env = {{"FAKECUDNN_HEUR_COUNT", "2"}, {"FAKECUDNN_UNSUPPORTED_ENGINES", "7,3"}};
  std::string dir = fresh_dir("budget-fallback-needed");
  std::vector<std::string> storm = kStorm;
  storm.push_back("--fallback");
  Env with_delay = env;
  with_delay.push_back({"FAKECUDA_DELAY_US", "cudaEventSynchronize:2000"});
  RunResult r = record(dir, search_cmd(storm), with_delay, {"--search-budget", "5%"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = picks(r.out);
  ASSERT_EQ(got.size(), 12u) << r.out;
  for (const Pick& p : got) EXPECT_EQ(p.winner, 0) << p.kind << " " << p.batch << ": the fallback list's first";
  auto pins = of_type(dump(dir), "pin");
  ASSERT_EQ(pins.size(), 9u);
  for (const auto& p : pins) {
    EXPECT_EQ(p["outcome"], "budgeted");
    EXPECT_FALSE(p.contains("no_fallback")) << p.dump();
  }
  EXPECT_EQ(budget_of(analyze_json({dir}))["budgeted_without_fallback"], 0);
}

TEST(SearchBudget, UnderTheBudgetEverySelectionSearches) {
  std::string dir = fresh_dir("budget-not-hit");
  RunResult r = record(dir, search_cmd(kStorm), {}, {"--search-budget", "100"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = picks(r.out);
  ASSERT_EQ(got.size(), 12u);
  for (const Pick& p : got) EXPECT_GT(p.candidates, 1) << p.kind << " " << p.batch;
  EXPECT_TRUE(of_type(dump(dir), "pin").empty());
  json b = budget_of(analyze_json({dir}));
  EXPECT_EQ(b["budgeted"], 0);
  EXPECT_NE(b["text"].get<std::string>().find("never reached"), std::string::npos) << b;
}

TEST(SearchBudget, NoSecondShapeOrNoSearchNeverHitsIt) {
  // The same problems searched again (a cache eviction) with a budget of 0: no layer changed shape.
  RunResult repeat = record(fresh_dir("budget-repeat"), search_cmd({"--benchmark", "--bwd", "--repeat", "3"}), {},
                            {"--search-budget", "0"});
  ASSERT_EQ(repeat.status, 0) << repeat.err;
  auto got = picks(repeat.out);
  ASSERT_EQ(got.size(), 9u);
  for (const Pick& p : got) EXPECT_GT(p.candidates, 1);
  // cudnn.benchmark off: shapes change, but nothing is ever timed, so nothing is budgeted.
  std::string dir = fresh_dir("budget-heuristic");
  RunResult heur = record(dir, search_cmd({"--bwd", "--shapes", "4"}), {}, {"--search-budget", "0"});
  ASSERT_EQ(heur.status, 0) << heur.err;
  auto plain = run(search_cmd({"--bwd", "--shapes", "4"}));
  EXPECT_EQ(picks(heur.out).size(), 12u);
  for (size_t i = 0; i < picks(heur.out).size(); ++i) {
    EXPECT_EQ(picks(heur.out)[i].winner, picks(plain.out)[i].winner);
    EXPECT_EQ(picks(heur.out)[i].candidates, picks(plain.out)[i].candidates);
  }
  EXPECT_TRUE(of_type(dump(dir), "pin").empty());
}

TEST(SearchBudget, TheApplicationsFiltersStillApply) {
  // --skip-engine drops the heuristics' configurations of one engine before plans are built, as
  // PyTorch's determinism and TF32 filters do: the budgeted choice is the first of the rest.
  auto heuristic = heuristic_winners();
  int skip = heuristic["conv_fwd"];
  auto filtered = heuristic_winners({"--skip-engine", std::to_string(skip)});
  std::string dir = fresh_dir("budget-filter");
  RunResult r =
      record(dir, search_cmd({"--benchmark", "--bwd", "--shapes", "3", "--skip-engine", std::to_string(skip)}), {},
             {"--search-budget", "5"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const Pick& p : picks(r.out)) {
    EXPECT_NE(p.winner, skip);
    if (p.batch != 8) {
      EXPECT_EQ(p.winner, filtered[p.kind]) << p.kind << " " << p.batch;
    }
  }
}

TEST(SearchBudget, ThreadsAndHandlesAreBudgetedEachOnTheirOwn) {
  std::string dir = fresh_dir("budget-threads");
  RunResult r = record(dir, search_cmd({"--benchmark", "--bwd", "--shapes", "3", "--threads", "3"}), {},
                       {"--search-budget", "5"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = picks(r.out);
  ASSERT_EQ(got.size(), 27u) << r.out;
  int one = 0;
  for (const Pick& p : got) one += p.candidates == 1;
  auto pins = of_type(dump(dir), "pin");
  EXPECT_EQ(int(pins.size()), one) << "one budgeted record per selection that took one candidate";
  std::set<int> tids;
  for (const auto& p : pins) {
    EXPECT_EQ(p["outcome"], "budgeted");
    tids.insert(p["tid"].get<int>());
  }
  EXPECT_GE(tids.size(), 2u);
}

TEST(SearchBudget, PinnedProblemsComeFirstThenTheBudget) {
  std::string src = fresh_dir("budget-pin-src");
  ASSERT_EQ(record(src, search_cmd({"--benchmark", "--bwd"}), {{"FAKECUDNN_ENGINE_US", "5:5"}}).status, 0);
  std::string file = src + "/plans.json";
  ASSERT_EQ(run({cuprobe_bin(), "plans", "export", "-q", "-o", file, src}).status, 0);
  auto heuristic = heuristic_winners();
  std::string dir = fresh_dir("budget-pin");
  RunResult r = record(dir, search_cmd({"--benchmark", "--bwd", "--shapes", "3"}), {},
                       {"--pin-plans", file, "--search-budget", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const Pick& p : picks(r.out)) {
    EXPECT_EQ(p.candidates, 1) << p.kind << " " << p.batch;
    EXPECT_EQ(p.winner, p.batch == 8 ? 5 : heuristic[p.kind]) << p.kind << " " << p.batch;
  }
  std::map<std::string, int> outcomes;
  for (const auto& p : of_type(dump(dir), "pin")) ++outcomes[p["outcome"].get<std::string>()];
  EXPECT_EQ(outcomes["pinned"], 3);
  EXPECT_EQ(outcomes["budgeted"], 6);
  // The budgeted plans are exported as heuristic picks, without a measured time.
  std::string out = dir + "/plans.json";
  ASSERT_EQ(run({cuprobe_bin(), "plans", "export", "-q", "-o", out, dir}).status, 0);
  std::ifstream in(out);
  json doc = json::parse(in);
  int heuristic_plans = 0;
  for (const auto& p : doc["plans"]) {
    if (p["mode"] != "heuristic") continue;
    ++heuristic_plans;
    EXPECT_TRUE(p["time_ms"].is_null()) << p.dump();
  }
  EXPECT_EQ(heuristic_plans, 6) << doc.dump(1);
}

TEST(SearchBudget, HeuristicPicksInAPlanFileAreLeftToTheBudget) {
  // A budgeted run's plan file: 3 benchmark winners (the first shape) and 6 heuristic picks.
  std::string src = fresh_dir("budget-learn-src");
  ASSERT_EQ(record(src, search_cmd({"--benchmark", "--bwd", "--shapes", "3"}), {}, {"--search-budget", "5"}).status, 0);
  std::string file = src + "/plans.json";
  ASSERT_EQ(run({cuprobe_bin(), "plans", "export", "-q", "-o", file, src}).status, 0);
  // Pinned without a budget: every problem of the file takes its plan, heuristic picks included.
  RunResult pinned = record(fresh_dir("budget-learn-pinned"), search_cmd({"--benchmark", "--bwd", "--shapes", "3"}), {},
                            {"--pin-plans", file});
  ASSERT_EQ(pinned.status, 0) << pinned.err;
  for (const Pick& p : picks(pinned.out)) EXPECT_EQ(p.candidates, 1) << p.kind << " " << p.batch;
  // Under a budget the heuristic picks are the budget's: with room for them they are searched.
  std::string dir = fresh_dir("budget-learn");
  RunResult r = record(dir, search_cmd({"--benchmark", "--bwd", "--shapes", "3"}), {},
                       {"--pin-plans", file, "--search-budget", "100"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("6 of its 9 plans are heuristic picks"), std::string::npos) << r.err;
  for (const Pick& p : picks(r.out)) {
    SCOPED_TRACE(p.kind + " batch " + std::to_string(p.batch));
    if (p.batch == 8)
      EXPECT_EQ(p.candidates, 1);
    else
      EXPECT_GT(p.candidates, 1);
  }
  std::map<std::string, int> outcomes;
  for (const auto& p : of_type(dump(dir), "pin")) ++outcomes[p["outcome"].get<std::string>()];
  EXPECT_EQ(outcomes["pinned"], 3);
  EXPECT_EQ(outcomes["budgeted"], 0);
}

TEST(SearchBudget, LegacyFindIsAnsweredWithTheHeuristicsPastTheBudget) {
  std::string dir = fresh_dir("budget-legacy");
  RunResult r = record(dir, {program("legacy_conv"), "--batches", "8,4"}, {}, {"--search-budget", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  // The first batch's Find calls search (the double's winner is 6); the second batch's are
  // answered with the heuristics' order, whose first algorithm is 1.
  for (const char* d : {"fwd", "bwd_data", "bwd_filter"}) {
    std::string first = std::string("legacy ") + d + " algo=";
    size_t a = r.out.find(first);
    ASSERT_NE(a, std::string::npos) << r.out;
    size_t b = r.out.find(first, a + 1);
    ASSERT_NE(b, std::string::npos) << r.out;
    EXPECT_EQ(r.out.compare(b + first.size(), 2, "1 "), 0) << r.out.substr(b, 60);
  }
  auto lines = dump(dir);
  auto pins = of_type(lines, "pin");
  ASSERT_EQ(pins.size(), 3u);
  for (const auto& p : pins) {
    EXPECT_EQ(p["outcome"], "budgeted");
    EXPECT_EQ(p.value("legacy", false), true) << p.dump();
    EXPECT_EQ(p["engine"], 1);
  }
  auto finds = of_type(lines, "call", "cudnnFindConvolutionForwardAlgorithmEx");
  ASSERT_EQ(finds.size(), 2u);
  EXPECT_FALSE(finds[0].contains("pinned"));
  EXPECT_TRUE(finds[1].contains("pinned")) << "answered by the shim";
  EXPECT_EQ(budget_of(analyze_json({dir}))["budgeted_legacy"], 3);
}

// Deferred searches: a budgeted problem whose plan keeps running is searched later, once the
// searches' share of the job's time has fallen under the budget, and the winner runs in its place.
// --step-ms 100: each run of a new shape's plan follows 100 ms of other work, so after the third
// run the share is a few percent (the double's searches take milliseconds), well under 20%.
const std::vector<std::string> kSettling = {"--benchmark", "--bwd", "--shapes",  "2",
                                            "--steps",     "6",     "--step-ms", "100"};

// The executions of the forward problem of batch 16, in order: their engines.
std::vector<int> fwd16_engines(const std::vector<json>& lines) {
  std::vector<int> engines;
  for (const auto& e : of_type(lines, "call", "cudnnBackendExecute")) {
    if (e["problem"].get<std::string>().rfind("conv_fwd x[16,", 0) == 0) engines.push_back(e["engine"].get<int>());
  }
  return engines;
}

TEST(SearchBudget, ARecurringBudgetedProblemIsSearchedLaterAndRunsTheWinner) {
  // Engine 5 is the double's fastest here, and not cuDNN's heuristic choice.
  Env fast5 = {{"FAKECUDNN_ENGINE_US", "5:5"}};
  auto heuristic = heuristic_winners();
  ASSERT_NE(heuristic["conv_fwd"], 5);
  std::string dir = fresh_dir("budget-deferred");
  RunResult r = record(dir, search_cmd(kSettling), fast5, {"--search-budget", "20"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  std::map<std::string, int> outcomes;
  json later;
  for (const auto& p : of_type(lines, "pin")) {
    ++outcomes[p["outcome"].get<std::string>()];
    if (p["outcome"] == "searched-later") later = p;
  }
  // The first new shape's forward selection is budgeted (the warm-up's searches are nearly all of
  // the time so far); by the next selection the share has fallen and searches run again.
  EXPECT_EQ(outcomes["budgeted"], 1) << r.out;
  ASSERT_EQ(outcomes["searched-later"], 1) << r.out;
  EXPECT_EQ(later["engine"], 5) << later.dump();
  EXPECT_EQ(later.value("moved", false), true);
  EXPECT_GT(later["replaced_ms"].get<double>(), later["pinned_ms"].get<double>()) << later.dump();
  EXPECT_GT(later["search_ms"].get<double>(), 0);
  EXPECT_EQ(later["problem"].get<std::string>().rfind("conv_fwd x[16,", 0), 0u) << later.dump();
  // The budgeted plan ran (its timing and three runs), then the winner, recorded as engine 5.
  auto engines = fwd16_engines(lines);
  ASSERT_GE(engines.size(), 4u);
  EXPECT_EQ(engines.front(), heuristic["conv_fwd"]);
  EXPECT_EQ(engines.back(), 5);
  // The analysis: the switch is the budget's, not a plan divergence; the summary counts it.
  json a = analyze_json({dir});
  for (const auto& f : a["findings"]) {
    EXPECT_NE(f["rule"], "algo-divergence") << f.dump();
    // A problem searched later came back: the budget did its work, no advice to turn it off.
    if (f["rule"] == "research-storm") EXPECT_EQ(f["fix"].get<std::string>().find("benchmark off"), std::string::npos);
  }
  json b = budget_of(a);
  EXPECT_EQ(b["searched_later"], 1) << b.dump();
  EXPECT_EQ(b["searched_later_moved"], 1) << b.dump();
  EXPECT_NE(b["text"].get<std::string>().find("searched later"), std::string::npos) << b.dump();
  // plans export writes the deferred search's winner as a benchmark pick with its time.
  std::string file = dir + "/plans.json";
  ASSERT_EQ(run({cuprobe_bin(), "plans", "export", "-q", "-o", file, dir}).status, 0);
  std::ifstream in(file);
  json doc = json::parse(in);
  bool exported = false;
  for (const auto& p : doc["plans"]) {
    if (p["problem"].get<std::string>().rfind("conv_fwd x[16,", 0) != 0) continue;
    exported = true;
    EXPECT_EQ(p["engine"], 5) << p.dump();
    EXPECT_EQ(p["mode"], "benchmark") << p.dump();
    EXPECT_GT(p["time_ms"].get<double>(), 0) << p.dump();
  }
  EXPECT_TRUE(exported) << doc.dump(1);
  // The configurations kept for the deferred search are destroyed once, whichever the application
  // destroys first, the plan or the configurations (PyTorch: the configurations; its plan cache
  // outlives them): nothing left alive, and no destroy of a destroyed descriptor (the double
  // refuses it, and the program stops at a failed call).
  for (bool configs_first : {false, true}) {
    auto args = kSettling;
    if (configs_first) args.push_back("--configs-die-first");
    Env env = fast5;
    env.push_back({"FAKECUDNN_REPORT_LIVE", "1"});
    RunResult again = record(fresh_dir("budget-deferred-live"), search_cmd(args), env, {"--search-budget", "20"});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.err.find("fakecudnn: 0 backend descriptors alive"), std::string::npos) << again.err;
    EXPECT_NE(again.out.find("conv_fwd batch=16 mode=benchmark winner_engine="), std::string::npos) << again.out;
  }
}

TEST(SearchBudget, DeferredSearchesKeepFiltersAndNeverRerunWhatTheyMustNot) {
  Env fast5 = {{"FAKECUDNN_ENGINE_US", "5:5"}};
  // The application's filter drops engine 5 (as PyTorch's determinism filter drops
  // nondeterministic engines): the deferred search never picks it.
  {
    std::string dir = fresh_dir("budget-deferred-filter");
    auto args = kSettling;
    args.insert(args.end(), {"--skip-engine", "5"});
    RunResult r = record(dir, search_cmd(args), fast5, {"--search-budget", "20"});
    ASSERT_EQ(r.status, 0) << r.err;
    int later = 0;
    for (const auto& p : of_type(dump(dir), "pin")) {
      if (p["outcome"] != "searched-later") continue;
      ++later;
      EXPECT_NE(p["engine"], 5) << p.dump();
    }
    EXPECT_EQ(later, 1);
  }
  // A variant pack whose output is an input's buffer, or a stream capturing a CUDA graph: the
  // budgeted plan keeps running, nothing is rerun.
  for (auto [name, extra, env] : {std::tuple<std::string, std::vector<std::string>, Env>{"alias", {"--alias"}, fast5},
                                  {"capture", {}, {{"FAKECUDNN_ENGINE_US", "5:5"}, {"FAKECUDA_CAPTURING", "1"}}}}) {
    SCOPED_TRACE(name);
    std::string dir = fresh_dir("budget-deferred-" + name);
    auto args = kSettling;
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = record(dir, search_cmd(args), env, {"--search-budget", "20"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto lines = dump(dir);
    std::map<std::string, int> outcomes;
    for (const auto& p : of_type(lines, "pin")) ++outcomes[p["outcome"].get<std::string>()];
    EXPECT_EQ(outcomes["budgeted"], 1);
    EXPECT_EQ(outcomes["searched-later"], 0);
    for (int e : fwd16_engines(lines)) EXPECT_NE(e, 5);
  }
}

TEST(SearchBudget, RecordRefusesABudgetItCannotRead) {
  for (const char* bad : {"101", "-1", "5%%", "abc", "2.555", "5 %"}) {
    RunResult r = run({cuprobe_bin(), "record", "-o", fresh_dir("budget-bad"), "--search-budget", bad, "--", "true"});
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("--search-budget expects a share of the job's time from 0 to 100"), std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace cuprobe::test
