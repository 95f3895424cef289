// Every rule in rules/ against its fixtures, found on disk (no list to edit): the traces under
// rules/fixtures/<id>/fire must produce a finding of that rule, those under quiet must not.
// Also the rule data handling: loading, overriding, --set, message templates.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "analysis/engine.h"
#include "analysis/facts.h"
#include "support/run.h"

namespace cuprobe::analysis {
namespace {

namespace fs = std::filesystem;

const std::string kRules = CUPROBE_TEST_RULES_DIR;

std::vector<std::string> jsonl_in(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".jsonl") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Finding> run(const std::vector<std::string>& paths, const std::string& only) {
  AnalyzeOptions o;
  o.paths = paths;
  o.rule_dirs = {kRules};
  o.only_rules = {only};
  auto r = analyze(o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? r->findings : std::vector<Finding>{};
}

TEST(Rules, EveryRuleHasFixturesThatFireAndFixturesThatDoNot) {
  auto rules = load_rules({kRules});
  ASSERT_TRUE(rules) << rules.error().message;
  EXPECT_GE(rules->size(), 8u);
  for (const auto& [id, spec] : *rules) {
    SCOPED_TRACE(id);
    auto fire = jsonl_in(fs::path(kRules) / "fixtures" / id / "fire");
    auto quiet = jsonl_in(fs::path(kRules) / "fixtures" / id / "quiet");
    ASSERT_FALSE(fire.empty()) << "rules/fixtures/" << id << "/fire has no *.jsonl";
    ASSERT_FALSE(quiet.empty()) << "rules/fixtures/" << id << "/quiet has no *.jsonl";
    auto fired = run(fire, id);
    EXPECT_FALSE(fired.empty()) << "rule did not fire on its fire fixtures";
    for (const auto& f : fired) {
      EXPECT_EQ(f.rule, id);
      EXPECT_FALSE(f.message.empty());
      EXPECT_EQ(f.message.find("{"), std::string::npos) << "unexpanded placeholder: " << f.message;
    }
    // Quiet fixtures are checked one by one: each must be clean on its own. A rule whose findings
    // are warnings or errors may still say, at info, what it saw and found harmless
    // (research-storm names the pattern of searches that stopped early); nothing more.
    for (const auto& q : quiet) {
      for (const auto& f : run({q}, id)) {
        EXPECT_TRUE(spec.severity > Severity::kInfo && f.severity == Severity::kInfo) << q << ": " << f.message;
      }
    }
  }
}

TEST(Rules, SetChangesAThresholdAndNamesWhatIsWrong) {
  auto rules = load_rules({kRules});
  ASSERT_TRUE(rules);
  EXPECT_TRUE(apply_setting(*rules, "research-storm.min_late_searches=1000"));
  EXPECT_EQ(rules->at("research-storm").param("min_late_searches"), 1000);
  auto bad_rule = apply_setting(*rules, "no-such-rule.x=1");
  ASSERT_FALSE(bad_rule);
  EXPECT_NE(bad_rule.error().message.find("no rule 'no-such-rule'"), std::string::npos);
  auto bad_param = apply_setting(*rules, "research-storm.nope=1");
  ASSERT_FALSE(bad_param);
  EXPECT_NE(bad_param.error().message.find("min_late_searches"), std::string::npos) << bad_param.error().message;
  auto bad_value = apply_setting(*rules, "research-storm.min_late_searches=lots");
  ASSERT_FALSE(bad_value);
  EXPECT_NE(bad_value.error().message.find("not a number"), std::string::npos);
  EXPECT_FALSE(apply_setting(*rules, "research-storm"));

  // A threshold raised above what the fixture shows silences the rule.
  AnalyzeOptions o;
  o.paths = jsonl_in(fs::path(kRules) / "fixtures" / "research-storm" / "fire");
  o.rule_dirs = {kRules};
  o.settings = {"research-storm.min_late_searches=1000"};
  auto r = analyze(o);
  ASSERT_TRUE(r);
  for (const auto& f : r->findings) EXPECT_NE(f.rule, "research-storm");
}

TEST(Rules, AnOverridingDirectoryReplacesARuleById) {
  std::string dir = test::fresh_dir("rules-override");
  std::ifstream in(kRules + "/sync-stall.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = text.find("\"value\": 0.3");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "\"value\": 0.99");
  std::ofstream(dir + "/sync-stall.json") << text;
  auto rules = load_rules({kRules, dir});
  ASSERT_TRUE(rules);
  EXPECT_EQ(rules->at("sync-stall").param("min_share"), 0.99);
  EXPECT_EQ(rules->at("sync-stall").file, dir + "/sync-stall.json");
}

TEST(Rules, BrokenRuleFilesAreRefusedWithTheirName) {
  std::string dir = test::fresh_dir("rules-broken");
  std::ofstream(dir + "/sync-stall.json") << "{ not json";
  auto r = load_rules({dir});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("sync-stall.json: not valid JSON"), std::string::npos) << r.error().message;
  std::string dir2 = test::fresh_dir("rules-misnamed");
  std::ofstream(dir2 + "/other.json") << R"({"id": "sync-stall", "title": "t", "severity": "info", "message": "m"})";
  auto r2 = load_rules({dir2});
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().message.find("named after the rule's id"), std::string::npos) << r2.error().message;
  std::string dir3 = test::fresh_dir("rules-unknown");
  std::ofstream(dir3 + "/made-up.json") << R"({"id": "made-up", "title": "t", "severity": "info", "message": "m"})";
  auto r3 = load_rules({dir3});
  ASSERT_FALSE(r3);
  EXPECT_NE(r3.error().message.find("no matching logic for rule 'made-up'"), std::string::npos);
}

TEST(Rules, MessageTemplatesFormatTheirValues) {
  nlohmann::json v = {{"n", 412}, {"share", 0.382}, {"bytes", 3ull << 30}, {"name", "conv_fwd"}, {"t", 1.5}};
  EXPECT_EQ(render("{n} searches for {name}; {share:pct} in search, {bytes:bytes}, {t:s}, {missing}", v),
            "412 searches for conv_fwd; 38.2% in search, 3.00 GiB, 1.50 s, {missing}");
}

}  // namespace
}  // namespace cuprobe::analysis


namespace cuprobe::analysis {
namespace {

TEST(Rules, RepeatedSearchesAtOtherAlignmentsNameTheCause) {
  auto findings = run({kRules + "/fixtures/research-repeat/fire/alignment.jsonl"}, "research-repeat");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].evidence["alignment_differs"], 1);
  EXPECT_NE(findings[0].message.find("pointer alignments"), std::string::npos) << findings[0].message;
  // Evictions at one alignment are told apart from it.
  auto evicted = run({kRules + "/fixtures/research-repeat/fire/evicted.jsonl"}, "research-repeat");
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].evidence["alignment_differs"], 0);
  EXPECT_NE(evicted[0].message.find("lost the entry"), std::string::npos) << evicted[0].message;
}

}  // namespace
}  // namespace cuprobe::analysis


namespace cuprobe::analysis {
namespace {

// Issue 13: research-storm judges the cause from the job's last half, and names the pattern.
Finding only_storm(const std::string& fixture) {
  auto findings = run({kRules + "/fixtures/research-storm/" + fixture}, "research-storm");
  EXPECT_EQ(findings.size(), 1u) << fixture;
  return findings.empty() ? Finding{} : findings[0];
}

TEST(Rules, ResearchStormNamesUnboundedShapesThroughTheRun) {
  Finding two_d = only_storm("fire/unbounded_2d.jsonl");
  EXPECT_EQ(two_d.evidence["pattern"], "unbounded dynamic shapes");
  EXPECT_GE(int(two_d.severity), int(Severity::kWarning));
  EXPECT_EQ(two_d.evidence["searching_stopped"], false);
  EXPECT_GT(two_d.evidence["last_half_searches"].get<int>(), 5);
  EXPECT_GT(two_d.evidence["last_half_share"].get<double>(), 0.02);
  EXPECT_NE(two_d.fix.find("benchmark off"), std::string::npos) << two_d.fix;

  // 1-D lengths: the dummy height PyTorch adds is neither in the problems nor in the range.
  Finding one_d = only_storm("fire/unbounded_1d.jsonl");
  EXPECT_EQ(one_d.evidence["pattern"], "unbounded dynamic shapes");
  EXPECT_GE(int(one_d.severity), int(Severity::kWarning));
  const std::string& m = one_d.message;
  EXPECT_NE(m.find("spatial size varies 4000.."), std::string::npos) << m;
  for (const char* bad : {" 1..", "[1..", "(1.."}) EXPECT_EQ(m.find(bad), std::string::npos) << bad << " in " << m;
  ASSERT_FALSE(one_d.problems.empty());
  for (const auto& text : one_d.problems) {
    EXPECT_NE(text.find("ncw"), std::string::npos) << text;
    EXPECT_EQ(text.find(",1,"), std::string::npos) << text;
  }
  // The start-up before the first work is not the job's time.
  EXPECT_GT(one_d.evidence["startup_s"].get<double>(), 0.9);
}

TEST(Rules, ResearchStormSaysWhenSearchingStoppedAndThatItIsHarmless) {
  Finding buckets = only_storm("quiet/two_buckets_1d.jsonl");
  EXPECT_EQ(buckets.severity, Severity::kInfo);
  EXPECT_EQ(buckets.evidence["pattern"], "shape buckets");
  EXPECT_EQ(buckets.evidence["searching_stopped"], true);
  EXPECT_EQ(buckets.evidence["last_half_searches"], 0);
  EXPECT_EQ(buckets.evidence["last_search_step"], 2);
  EXPECT_LT(buckets.evidence["last_search_s"].get<double>(), 1.0);
  EXPECT_NE(buckets.message.find("searching stopped at step 2"), std::string::npos) << buckets.message;
  EXPECT_NE(buckets.message.find("spatial size varies 8000..16000"), std::string::npos) << buckets.message;

  Finding partial = only_storm("quiet/last_partial_batch.jsonl");
  EXPECT_EQ(partial.severity, Severity::kInfo);
  EXPECT_EQ(partial.evidence["pattern"], "last partial batch");
  EXPECT_NE(partial.fix.find("drop_last=True"), std::string::npos) << partial.fix;

  // A one-epoch job's partial batch, searched in one of the last half's steps: however much of
  // the last half it costs, a one-off.
  Finding one_epoch = only_storm("quiet/one_epoch_partial_batch.jsonl");
  EXPECT_EQ(one_epoch.severity, Severity::kInfo);
  EXPECT_EQ(one_epoch.evidence["pattern"], "last partial batch");
  EXPECT_GE(one_epoch.evidence["last_half_share"].get<double>(), 0.02);  // costly, so only the spread decides
  EXPECT_EQ(one_epoch.evidence["last_half_steps_searching"], 1);
  EXPECT_EQ(one_epoch.evidence["last_half_steps"], 8);

  Finding eval = only_storm("quiet/evaluation_batch.jsonl");
  EXPECT_EQ(eval.severity, Severity::kInfo);
  EXPECT_EQ(eval.evidence["pattern"], "evaluation batch size");

  // Warm-up measured from the first work, not from the interpreter's start: nothing is late.
  EXPECT_TRUE(run({kRules + "/fixtures/research-storm/quiet/long_startup.jsonl"}, "research-storm").empty());
}

// Issue 28: a detection-style job, six image sizes through the backbone and a head whose batch is
// the step's proposal count. The backbone's buckets do not make it harmless: the head's batch is a
// dynamic dimension, and the cost in the last half decides the severity. Padded to one count,
// the same job's six sizes are buckets again.
TEST(Rules, ResearchStormSeesADynamicBatchBehindFewImageSizes) {
  Finding storm = only_storm("fire/detection_dynamic_batch.jsonl");
  EXPECT_EQ(storm.evidence["pattern"], "unbounded dynamic shapes");
  EXPECT_GE(int(storm.severity), int(Severity::kWarning));
  EXPECT_NE(storm.evidence["varying"].get<std::string>().find("batch varies"), std::string::npos);
  EXPECT_EQ(storm.message.find("nothing to fix"), std::string::npos) << storm.message;
  EXPECT_NE(storm.message.find("a run 10 times as long would spend"), std::string::npos) << storm.message;
  EXPECT_GT(storm.evidence["latest_window_share"].get<double>(), 0.1);
  EXPECT_NE(storm.fix.find("pad it to a few sizes"), std::string::npos) << storm.fix;
  ASSERT_FALSE(storm.problems.empty());
  EXPECT_NE(storm.problems.front().find(",14,14]"), std::string::npos) << "the head's problems first: "
                                                                       << storm.problems.front();

  Finding padded = only_storm("quiet/detection_padded_proposals.jsonl");
  EXPECT_EQ(padded.severity, Severity::kInfo);
  EXPECT_EQ(padded.evidence["pattern"], "shape buckets");
  EXPECT_EQ(padded.evidence["searching_stopped"], true);
}

// Issue 28: a post-mortem reads the event that ended the run first, whatever else cost more.
TEST(Findings, TheEventThatEndedTheRunComesFirst) {
  AnalyzeOptions o;
  o.paths = {kRules + "/fixtures/research-storm/fire/unbounded_2d.jsonl",
             kRules + "/fixtures/oom-postmortem/fire/request_too_large.jsonl"};
  o.rule_dirs = {kRules};
  auto r = analyze(o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_GE(r->findings.size(), 2u);
  EXPECT_EQ(r->findings[0].rule, "oom-postmortem");
  EXPECT_EQ(r->findings[0].run_event, RunEvent::kEndedRun);
  bool storm_after = false;
  for (size_t i = 1; i < r->findings.size(); ++i) {
    storm_after = storm_after || (r->findings[i].rule == "research-storm" && r->findings[i].impact_s > 0);
  }
  EXPECT_TRUE(storm_after);
  // Failures the job went on after come before other findings of any severity and cost.
  Finding caught, costly;
  caught.run_event = RunEvent::kFailure;
  caught.severity = Severity::kWarning;
  costly.severity = Severity::kError;
  costly.impact_s = 1e6;
  EXPECT_TRUE(finding_before(caught, costly));
  EXPECT_FALSE(finding_before(costly, caught));
}

}  // namespace
}  // namespace cuprobe::analysis


// Issue 13: algo-divergence names why the ranks chose differently, and env-drift what differs
// between them (or within one process).
namespace cuprobe::analysis {
namespace {

std::vector<std::string> fixtures_in(const std::string& dir) { return jsonl_in(fs::path(kRules) / "fixtures" / dir); }

TEST(Rules, DivergenceWithBenchmarkOffOnOneRankIsConfigurationDrift) {
  auto findings = run(fixtures_in("algo-divergence/fire/benchmark-off"), "algo-divergence");
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.evidence["cause"], "configuration drift between ranks");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.message.rfind("rank 1 chose its plans by heuristics (benchmark off), rank 0 by timing (benchmark on): the "
                            "ranks are configured differently", 0), 0u) << f.message;
  // Rank 1 measured nothing: no time is printed for it.
  EXPECT_NE(f.message.find("not measured (heuristics)"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("0.000 ms"), std::string::npos) << f.message;
  bool rank1_null = false;
  for (const auto& p : f.evidence["per_process"]) {
    if (p["measured"] == 0) rank1_null = p["chosen_plans_ms"].is_null();
  }
  EXPECT_TRUE(rank1_null) << f.evidence["per_process"].dump();
}

TEST(Rules, DivergenceOnDifferentGpuModelsIsLibraryDrift) {
  // fire/ with rank 1 on another model of the card: the cause is the drift, not the plans.
  fs::path dir = fs::temp_directory_path() / fmt::format("cuprobe-libdrift-{}", ::getpid());
  fs::create_directories(dir);
  for (std::string rank : {"rank0.jsonl", "rank1.jsonl"}) {
    std::ifstream in(fs::path(kRules) / "fixtures/algo-divergence/fire" / rank);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (rank == "rank1.jsonl") {
      auto at = text.find("\"name\":\"NVIDIA H100\"");
      ASSERT_NE(at, std::string::npos);
      text.replace(at, 20, "\"name\":\"NVIDIA H100 PCIe\"");
    }
    std::ofstream(dir / rank) << text;
  }
  auto findings = run({(dir / "rank0.jsonl").string(), (dir / "rank1.jsonl").string()}, "algo-divergence");
  fs::remove_all(dir);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].evidence["cause"], "library, driver or GPU drift");
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(findings[0].message.rfind("the ranks run different libraries, drivers or GPUs: GPU NVIDIA H100 (cc 9.0) on "
                                      "rank 0, NVIDIA H100 PCIe (cc 9.0) on rank 1", 0), 0u)
      << findings[0].message;
}

TEST(Rules, DivergenceAtKnobLevelWithTheSameConfigurationIsTimingNoise) {
  auto findings = run(fixtures_in("algo-divergence/quiet/near-ties"), "algo-divergence");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].evidence["cause"], "timing noise among near-equal candidates");
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
  // fire/: the same configuration, a rank that took the engine its own search timed 30% slower.
  auto clear = run(fixtures_in("algo-divergence/fire"), "algo-divergence");
  ASSERT_EQ(clear.size(), 1u);
  EXPECT_EQ(clear[0].evidence["cause"], "clearly different plans");
  EXPECT_EQ(clear[0].severity, Severity::kWarning);
}

// Measured on one H200 shared by two healthy DDP ranks: every differing problem's timings
// contradict, and each rank's timing of its own choices adds up to more than slower_share apart.
// That is noise unless one rank timed the candidates both timed systematically slower.
TEST(Rules, DivergenceWithContradictingTimingsIsNoiseUnlessOneSearchWasDisturbed) {
  auto noise = run(fixtures_in("algo-divergence/quiet/contradicting-timings"), "algo-divergence");
  ASSERT_EQ(noise.size(), 1u);
  const Finding& n = noise[0];
  EXPECT_EQ(n.severity, Severity::kInfo) << n.message;
  EXPECT_EQ(n.evidence["cause"], "timing noise among near-equal candidates");
  EXPECT_GT(n.evidence["chosen_plans_spread"].get<double>(), 0.1);  // the totals are apart...
  EXPECT_EQ(n.evidence["measurements_contradict"], n.evidence["diverging"]);
  EXPECT_NEAR(n.evidence["measurement_scale"].get<double>(), 1.0, 0.01);  // ...the timings alike
  EXPECT_NE(n.message.find("16.7% apart by its own timing"), std::string::npos) << n.message;

  auto disturbed = run(fixtures_in("algo-divergence/fire/disturbed-search"), "algo-divergence");
  ASSERT_EQ(disturbed.size(), 1u);
  const Finding& d = disturbed[0];
  EXPECT_EQ(d.severity, Severity::kWarning) << d.message;
  EXPECT_EQ(d.evidence["cause"], "clearly different plans");
  EXPECT_NEAR(d.evidence["measurement_scale"].get<double>(), 1.3, 0.01);
  EXPECT_NE(d.message.find("rank 1 (pid 1351 on host node0) timed the candidates it shared with rank 0 (pid 1350 on host "
                           "node0) a median 30% slower"),
            std::string::npos)
      << d.message;

  // Fewer candidates timed by both than min_common_candidates: the timings cannot be compared,
  // and the contradiction stands (noise).
  AnalyzeOptions o;
  o.paths = fixtures_in("algo-divergence/fire/disturbed-search");
  o.rule_dirs = {kRules};
  o.only_rules = {"algo-divergence"};
  o.settings = {"algo-divergence.min_common_candidates=100"};
  auto r = analyze(o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].severity, Severity::kInfo) << r->findings[0].message;
  EXPECT_EQ(r->findings[0].evidence["measurement_scale"], 0);
}

std::vector<std::string> kinds_of(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) {
    for (const auto& k : f.evidence["kinds"]) out.push_back(k.get<std::string>());
  }
  return out;
}

TEST(Rules, EnvDriftNamesEachKindOfDrift) {
  const std::string fire = kRules + "/fixtures/env-drift/fire/";
  struct Case {
    std::vector<std::string> paths;
    std::vector<std::string> kinds;
    Severity severity;
  };
  const Case cases[] = {
      {{fire + "duplicate_cudnn.jsonl"}, {"duplicate-library"}, Severity::kWarning},
      {{fire + "cudnn_for_cuda12.jsonl"}, {"cudnn-cuda-mismatch"}, Severity::kError},
      {{fire + "driver_too_old.jsonl"}, {"driver-too-old"}, Severity::kError},
      {fixtures_in("env-drift/fire/cudnn-version"), {"rank-version-drift"}, Severity::kWarning},
      {fixtures_in("env-drift/fire/torch-version"), {"rank-version-drift"}, Severity::kWarning},
      {fixtures_in("env-drift/fire/settings"), {"rank-settings-drift"}, Severity::kWarning},
      {fixtures_in("algo-divergence/fire/benchmark-off"), {"rank-settings-drift"}, Severity::kWarning},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.paths[0]);
    auto findings = run(c.paths, "env-drift");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(kinds_of(findings), c.kinds);
    EXPECT_EQ(findings[0].severity, c.severity);
  }
  auto dup = run({fire + "duplicate_cudnn.jsonl"}, "env-drift");
  ASSERT_EQ(dup.size(), 1u);
  EXPECT_NE(dup[0].message.find("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"), std::string::npos) << dup[0].message;
  auto settings = run(fixtures_in("env-drift/fire/settings"), "env-drift");
  ASSERT_EQ(settings.size(), 1u);
  std::string values;
  for (const auto& item : settings[0].evidence["items"]) values += item["value"].get<std::string>() + " ";
  EXPECT_EQ(values, "deterministic tf32 ");
  auto torch = run(fixtures_in("env-drift/fire/torch-version"), "env-drift");
  ASSERT_EQ(torch.size(), 1u);
  EXPECT_EQ(torch[0].evidence["items"][0]["value"], "torch_version") << torch[0].evidence;
  EXPECT_EQ(torch[0].evidence["items"].size(), 1u) << torch[0].evidence;  // NCCL and the driver agree
  EXPECT_NE(torch[0].message.find("PyTorch: 2.10.0+cu128 on rank 1, 2.11.0+cu130 on rank 0"), std::string::npos)
      << torch[0].message;
  // A job whose ranks agree on everything: nothing.
  EXPECT_TRUE(run(fixtures_in("env-drift/quiet"), "env-drift").empty());
}

TEST(Rules, ConfigurationIsInferredAcrossTheJob) {
  AnalyzeOptions o;
  o.paths = fixtures_in("env-drift/fire/settings");
  o.rule_dirs = {kRules};
  o.only_rules = {"env-drift"};
  auto r = analyze(o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->findings.size(), 1u);
  const auto& per = r->findings[0].evidence["per_process"];
  ASSERT_EQ(per.size(), 2u);
  EXPECT_EQ(per[0]["deterministic"], false);
  EXPECT_EQ(per[0]["tf32"], true);
  EXPECT_EQ(per[1]["deterministic"], true);
  EXPECT_EQ(per[1]["tf32"], false);
  EXPECT_EQ(per[0]["selection"], "benchmark");
  EXPECT_EQ(per[0]["cudnn_version"], 91900);
  EXPECT_EQ(per[0]["gpu"], "NVIDIA H200 (cc 9.0)");
  // One rank alone cannot tell deterministic mode from a problem without non-deterministic engines.
  o.paths = {o.paths[1]};
  auto alone = analyze(o);
  ASSERT_TRUE(alone);
  EXPECT_TRUE(alone->findings.empty());
}

}  // namespace
}  // namespace cuprobe::analysis


namespace cuprobe::analysis {
namespace {

// Issue 13: oom-postmortem names the cause an expert would, and gives that cause's fix.
TEST(Rules, OutOfMemoryNamesItsCause) {
  auto cause_of = [](const std::string& fixture) {
    auto findings = run({kRules + "/fixtures/oom-postmortem/fire/" + fixture}, "oom-postmortem");
    EXPECT_EQ(findings.size(), 1u) << fixture;
    return findings.empty() ? Finding{} : findings[0];
  };
  Finding frag = cause_of("fragmentation.jsonl");
  EXPECT_EQ(frag.evidence["cause"], "fragmentation");
  EXPECT_NE(frag.message.find("3.96 GiB free in its cache"), std::string::npos) << frag.message;
  EXPECT_NE(frag.fix.find("expandable_segments:True"), std::string::npos) << frag.fix;
  Finding big = cause_of("request_too_large.jsonl");
  EXPECT_EQ(big.evidence["cause"], "request larger than the device");
  EXPECT_NE(big.fix.find("The size is the bug"), std::string::npos) << big.fix;
  // Live data filling the device, with no report from the framework.
  EXPECT_EQ(cause_of("out_of_memory.jsonl").evidence["cause"], "memory full");
}

}  // namespace
}  // namespace cuprobe::analysis


namespace cuprobe::analysis {
namespace {

// Issue 13: findings judged against what an expert would weigh.
TEST(Rules, JudgedAgainstTheirContext) {
  // Ranks sharing one GPU explain each other's memory in the device's account.
  auto shared = run(fixtures_in("memory-coverage/quiet/two_ranks_one_gpu"), "memory-coverage");
  ASSERT_EQ(shared.size(), 2u);
  for (const auto& f : shared) {
    EXPECT_EQ(f.severity, Severity::kInfo) << f.message;
    EXPECT_TRUE(f.evidence["explained_by_job"].get<bool>());
  }
  // Alone, the same gap is a warning.
  auto alone = run({fixtures_in("memory-coverage/quiet/two_ranks_one_gpu")[0]}, "memory-coverage");
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].severity, Severity::kWarning);
  // Churn that died down is the allocator settling.
  auto settles = run({kRules + "/fixtures/allocation-churn/quiet/settles.jsonl"}, "allocation-churn");
  ASSERT_EQ(settles.size(), 1u);
  EXPECT_EQ(settles[0].severity, Severity::kInfo);
  EXPECT_FALSE(settles[0].evidence["lasting"].get<bool>());
  EXPECT_EQ(settles[0].fix.rfind("Nothing to fix", 0), 0u) << settles[0].fix;  // not the fix for lasting churn
  auto churn = run({kRules + "/fixtures/allocation-churn/fire/empty_cache_in_loop.jsonl"}, "allocation-churn");
  ASSERT_EQ(churn.size(), 1u);
  EXPECT_TRUE(churn[0].evidence["lasting"].get<bool>());
  // A search workspace is outsized on a small card (the memory cap), not on a large one, and never
  // when it is smaller than the problem's own tensors.
  auto capped = run({kRules + "/fixtures/workspace-blowup/fire/search_workspace_on_a_small_card.jsonl"},
                    "workspace-blowup");
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_EQ(capped[0].evidence["memory_limit"], "memory cap");
  EXPECT_TRUE(run({kRules + "/fixtures/workspace-blowup/quiet/search_workspace_on_a_large_card.jsonl"},
                  "workspace-blowup").empty());
  EXPECT_TRUE(run({kRules + "/fixtures/workspace-blowup/quiet/workspace_smaller_than_the_batch.jsonl"},
                  "workspace-blowup").empty());
  // PyTorch's cudaMallocAsync backend probing the pool before a search (a request that fails, a
  // smaller one given straight back): neither a search workspace nor an out-of-memory failure,
  // not even at info.
  const std::string probe = kRules + "/fixtures/workspace-blowup/quiet/pool_probe_before_search.jsonl";
  EXPECT_TRUE(run({probe}, "workspace-blowup").empty());
  EXPECT_TRUE(run({probe}, "oom-postmortem").empty());
  // A problem searched once on each of two threads: PyTorch's per-thread cache, information.
  auto per_thread = run({kRules + "/fixtures/research-repeat/quiet/per_thread_cache.jsonl"}, "research-repeat");
  ASSERT_EQ(per_thread.size(), 1u);
  EXPECT_EQ(per_thread[0].severity, Severity::kInfo);
  EXPECT_TRUE(per_thread[0].evidence["per_thread_only"].get<bool>());
}

}  // namespace
}  // namespace cuprobe::analysis

// Issue 33: cuDNN attention. A new sequence length every step builds new attention plans through
// the last half of the job (an error at 76% of it), which research-storm, about benchmark
// searches, does not report; the same job's divergence across ranks where the heuristics' first
// plan failed on one rank names that failure.
namespace cuprobe::analysis {
namespace {

TEST(Rules, AttentionPlansRebuiltForEveryLengthAreTheirOwnFinding) {
  auto fire = fixtures_in("attention-rebuild/fire");
  auto findings = run(fire, "attention-rebuild");
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.evidence["varying"], "sequence length 136..1920 (39 values)");
  EXPECT_EQ(f.evidence["ops"], "forward and backward");
  EXPECT_EQ(f.evidence["late_selections"], 78);
  EXPECT_EQ(f.evidence["last_half_selections"], 40);
  EXPECT_NEAR(f.evidence["per_selection_ms"].get<double>(), 62.2, 0.5);
  EXPECT_EQ(f.problems.size(), 5u);
  EXPECT_TRUE(run(fire, "research-storm").empty());  // not a benchmark search
  // The last half's share decides the severity: above it, info.
  AnalyzeOptions o;
  o.paths = fire;
  o.rule_dirs = {kRules};
  o.only_rules = {"attention-rebuild"};
  o.settings = {"attention-rebuild.min_last_half_share=0.9", "attention-rebuild.error_share=0.95"};
  auto lowered = analyze(o);
  ASSERT_TRUE(lowered);
  ASSERT_EQ(lowered->findings.size(), 1u);
  EXPECT_EQ(lowered->findings[0].severity, Severity::kInfo);
  // And a job that stopped building before its last half is not reported at all.
  o.settings = {"attention-rebuild.min_last_half_selections=41"};
  auto silenced = analyze(o);
  ASSERT_TRUE(silenced);
  EXPECT_TRUE(silenced->findings.empty());
}

TEST(Rules, AttentionDivergenceWhereTheFirstPlanFailedOnOneRankSaysSo) {
  auto findings = run(fixtures_in("algo-divergence/fire/attention"), "algo-divergence");
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.evidence["cause"], "a plan failed on some processes");
  EXPECT_NE(f.message.find("on rank 1 the plan rank 0 runs (engine 8 [kernel_cfg=22]) failed (running it: "
                           "CUDNN_STATUS_NOT_SUPPORTED (3000)) and it ran engine 11 [kernel_cfg=5]"),
            std::string::npos)
      << f.message;
  EXPECT_EQ(f.evidence["items"][0]["failed_on"], "rank 1");
}

TEST(Rules, AttentionWithoutAPlanSaysPyTorchRaisesAndNeverCallsHeadsChannels) {
  auto findings = run({(fs::path(kRules) / "fixtures/unsupported-config/fire/attention_no_plan.jsonl").string()},
                      "unsupported-config");
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.evidence["searches_without_engine"], 1);
  const std::string cause = f.evidence["known_cause"];
  EXPECT_NE(cause.find("no attention plan"), std::string::npos) << cause;
  EXPECT_NE(cause.find("raises 'cuDNN Frontend error'"), std::string::npos) << cause;
  // q[8,12,1024,64]: the second dimension is 12 heads, not channels.
  EXPECT_EQ(f.message.find("channels"), std::string::npos) << f.message;
  EXPECT_NE(f.fix.find("enable_cudnn_sdp(False)"), std::string::npos) << f.fix;
  EXPECT_EQ(f.fix.find("Pad channels"), std::string::npos) << "the convolution fixes are not for attention: " << f.fix;
  // The convolution fixture keeps its channel diagnosis.
  auto conv = run({(fs::path(kRules) / "fixtures/unsupported-config/fire/no_engine.jsonl").string()},
                  "unsupported-config");
  ASSERT_EQ(conv.size(), 1u);
  EXPECT_NE(conv[0].message.find("209 channels, not a multiple of 8"), std::string::npos) << conv[0].message;
}

TEST(Rules, PlansTheProgramRanOnPurposeAreNotASwitchButASecondSearchStillIs) {
  const fs::path dir = fs::path(kRules) / "fixtures/algo-divergence";
  auto fired = run({(dir / "fire/within-process/research.jsonl").string()}, "algo-divergence");
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].severity, Severity::kWarning);
  EXPECT_EQ(fired[0].evidence["switched_problems"], 1);
  EXPECT_EQ(fired[0].evidence["chosen_by_program"], 0);
  // cudnn-frontend's autotune, and a new heuristics question per graph: what the program chose.
  for (const char* quiet : {"quiet/within-process/autotune.jsonl", "quiet/within-process/heuristic_questions.jsonl"}) {
    EXPECT_TRUE(run({(dir / quiet).string()}, "algo-divergence").empty()) << quiet;
  }
}

}  // namespace
}  // namespace cuprobe::analysis
