// `cuprobe diff A B` (issue 31) on pairs of runs that differ in one thing each (the doubles): the
// first cause is that difference; identical runs give none of the causes that do not depend on
// timing (what differs, other problems, other plans, failures, memory).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

using nlohmann::json;

// Distinct engine times, so that the benchmark's winner is the same in every run.
const Env kEngines = {{"FAKECUDNN_ENGINE_US", "0:300,1:200,2:100,3:400,4:500,5:600,6:700,7:800"}};

std::string recorded(const std::string& tag, const std::vector<std::string>& argv,
                     const std::vector<std::string>& opts = {}, const Env& extra = {}) {
  std::string dir = fresh_dir("diff-" + tag) + "/run";
  std::vector<std::string> o = {"-q"};
  o.insert(o.end(), opts.begin(), opts.end());
  Env env;
  for (const auto& kv : kEngines) {  // a variable of `extra` replaces the default's
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || x.first == kv.first;
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  RunResult r = record(dir, argv, shim_env(env), o);
  EXPECT_TRUE(r.status == 0 || !opts.empty()) << tag << ": " << r.err;
  return dir;
}

json diffed(const std::string& a, const std::string& b) {
  RunResult r = run({cuprobe_bin(), "diff", "--json", a, b});
  EXPECT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

std::vector<std::string> search_job(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {program("frontend_search"), "--shapes", "3", "--steps", "20"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

TEST(Diff, EachSingleDifferenceIsTheFirstCause) {
  std::string a = recorded("a", search_job({"--benchmark"}));
  std::string a2 = recorded("a2", search_job({"--benchmark"}));

  // Identical runs: nothing that does not depend on timing.
  json same = diffed(a, a2);
  for (const auto& c : same["causes"]) {
    EXPECT_TRUE(c["kind"] == "searches" || c["kind"] == "syncs" || c["kind"] == "allocations") << c.dump();
  }

  // Benchmark off.
  json off = diffed(a, recorded("off", search_job({})));
  ASSERT_FALSE(off["causes"].empty());
  EXPECT_EQ(off["causes"][0]["kind"], "configuration");
  EXPECT_EQ(off["causes"][0]["details"]["setting"], "cudnn.benchmark");
  EXPECT_EQ(off["causes"][0]["what"], "cudnn.benchmark: on (timed searches) in A, off (heuristics) in B");
  EXPECT_TRUE(off["causes"][0]["peak_memory_delta"].is_number());  // the searches' workspace went with them

  // Other shapes: two problems more.
  json shapes =
      diffed(a, recorded("shapes", {program("frontend_search"), "--shapes", "5", "--steps", "20", "--benchmark"}));
  ASSERT_FALSE(shapes["causes"].empty());
  EXPECT_EQ(shapes["causes"][0]["kind"], "workload");
  EXPECT_EQ(shapes["causes"][0]["details"]["only_in_b"], 2);
  EXPECT_EQ(shapes["causes"][0]["details"]["only_in_a"], 0);

  // A plan file: A's own plans, pinned.
  std::string plans = fresh_dir("diff-plans") + "/plans.json";
  ASSERT_EQ(run({cuprobe_bin(), "plans", "export", "-q", "-o", plans, a}).status, 0);
  json pinned = diffed(a, recorded("pinned", search_job({"--benchmark"}), {"--pin-plans", plans}));
  ASSERT_FALSE(pinned["causes"].empty());
  EXPECT_EQ(pinned["causes"][0]["details"]["setting"], "plan file (record --pin-plans)");
  EXPECT_EQ(pinned["causes"][0]["details"]["b"], "3 plans pinned");

  // A fault injected into B's executions.
  json fault =
      diffed(a, recorded("fault", search_job({"--benchmark"}), {"--fault", "cudnn-execute:EXECUTION_FAILED,nth=40"}));
  ASSERT_FALSE(fault["causes"].empty());
  EXPECT_EQ(fault["causes"][0]["details"]["setting"], "fault plan (record --fault)");
  EXPECT_EQ(fault["causes"].back()["kind"], "failures");
}

TEST(Diff, AMemoryCapIsTheCauseOfTheOutOfMemory) {
  std::string a = recorded("mem-a", {program("fault_probe"), "malloc:100", "malloc:200"});
  std::string b = recorded("mem-b", {program("fault_probe"), "malloc:100", "malloc:200"}, {"--mem-cap", "150"});
  json d = diffed(a, b);
  ASSERT_GE(d["causes"].size(), 2u) << d.dump(2);
  EXPECT_EQ(d["causes"][0]["details"]["setting"], "memory cap (record --mem-cap)");
  EXPECT_EQ(d["causes"][0]["details"]["b"], "device 0: 150 B");
  EXPECT_EQ(d["causes"].back()["kind"], "failures");
  EXPECT_EQ(d["causes"].back()["details"]["ooms"], 1);
  // The text says the same, in the same order.
  RunResult t = run({cuprobe_bin(), "diff", a, b});
  EXPECT_EQ(t.status, 0) << t.err;
  size_t first = t.out.find("1. [configuration] memory cap (record --mem-cap): none in A, device 0: 150 B in B");
  size_t last = t.out.find("[failures] failures per process: out-of-memory +1");
  EXPECT_NE(first, std::string::npos) << t.out;
  EXPECT_NE(last, std::string::npos) << t.out;
  EXPECT_LT(first, last);
  EXPECT_NE(t.out.find("unattributed: "), std::string::npos) << t.out;
}

// A synchronization after every execution, and an allocation: each the first cause, with the
// calls per step on both sides, the API the time went to, and where the allocations came from.
TEST(Diff, SynchronizationsAndAllocationsAreMeasuredAndPlaced) {
  // Every run with the same slow synchronizations and allocations (3 ms, 0.5 ms): only how often
  // they are called differs.
  const Env slow = {{"FAKECUDA_DELAY_US", "cudaStreamSynchronize:3000,cudaMalloc:500"}};
  std::string a = recorded("sync-a", search_job({"--benchmark"}), {}, slow);
  // B with every call's stack (synchronizations carry one only then), so that the diff can say
  // where its extra synchronizations came from.
  std::string a_stacks = recorded("sync-a-stacks", search_job({"--benchmark"}), {"--stacks", "all"}, slow);
  json sync =
      diffed(a_stacks, recorded("sync-b", search_job({"--benchmark", "--sync-every", "1"}), {"--stacks", "all"}, slow));
  ASSERT_FALSE(sync["causes"].empty()) << sync.dump(2);
  const json& c = sync["causes"][0];
  EXPECT_EQ(c["kind"], "syncs") << sync.dump(2);
  EXPECT_GT(c["contribution_s_per_step"].get<double>(), 0.02) << c.dump(2);  // 20 × 3 ms per shape
  // One per execution of a winner more in B (a search's own synchronizations are not counted).
  EXPECT_GE(sync["syncs"]["b_calls_per_step"].get<double>() - sync["syncs"]["a_calls_per_step"].get<double>(), 20)
      << sync["syncs"].dump();
  EXPECT_GT(sync["syncs"]["by_api"]["cudaStreamSynchronize"]["b_s"].get<double>(), 0.02);
  EXPECT_NE(c["what"].get<std::string>().find("most of it in cudaStreamSynchronize"), std::string::npos) << c;
  // Where B's extra synchronizations came from: the program's own line, in the cause and the text.
  ASSERT_FALSE(c["details"]["b_sites"].empty()) << c.dump(2);
  EXPECT_NE(c["details"]["b_sites"][0].get<std::string>().find("frontend_search.cpp"), std::string::npos) << c;
  EXPECT_EQ(sync["syncs"], c["details"]);
  RunResult sync_text = run({cuprobe_bin(), "diff", a_stacks, sync["b"]["paths"][0]});
  size_t line = sync_text.out.find("  synchronizations per step: ");
  ASSERT_NE(line, std::string::npos) << sync_text.out;
  size_t b_site = sync_text.out.find("    B: 60 synchronizations from: run_problem at frontend_search.cpp:", line);
  EXPECT_LT(b_site, sync_text.out.find("  steady-state allocations", line)) << sync_text.out;
  EXPECT_FALSE(c["details"].contains("sites_note")) << c;
  // Without stacks on synchronizations (the default --stacks alloc), the diff says how to get them.
  json plain = diffed(a, recorded("sync-b2", search_job({"--benchmark", "--sync-every", "1"}), {}, slow));
  EXPECT_TRUE(plain["syncs"]["b_sites"].empty());
  EXPECT_NE(plain["syncs"].value("sites_note", "").find("--stacks all"), std::string::npos) << plain["syncs"];

  json alloc = diffed(a, recorded("alloc-b", search_job({"--benchmark", "--alloc-every", "1"}), {}, slow));
  ASSERT_FALSE(alloc["causes"].empty()) << alloc.dump(2);
  const json& al = alloc["causes"][0];
  EXPECT_EQ(al["kind"], "allocations") << alloc.dump(2);
  EXPECT_GT(al["details"]["b_bytes_per_step"].get<double>(), 20.0 * (1 << 20)) << al.dump(2);
  ASSERT_FALSE(al["details"]["b_sites"].empty()) << al.dump(2);
  EXPECT_NE(al["details"]["b_sites"][0].get<std::string>().find("frontend_search.cpp"), std::string::npos) << al;
  EXPECT_EQ(alloc["allocations"], al["details"]);

  RunResult text = run({cuprobe_bin(), "diff", a, alloc["b"]["paths"][0]});
  EXPECT_NE(text.out.find("steady-state allocations and frees per step: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    B: "), std::string::npos) << text.out;  // where they came from
}

// Plans that changed with nothing configured differently and that measured alike (the benchmark's
// choice between near-equal plans, as two runs of one ResNet-50 on an H100 showed): a note, not a
// cause. Here B's double makes engine 0 as fast as engine 11 (20 µs), so B's searches end on engine 0.
TEST(Diff, NearEqualPlansAreANoteNotACause) {
  std::string a = recorded("near-a", search_job({"--benchmark"}));
  std::string b = recorded("near-b", search_job({"--benchmark"}), {},
                           {{"FAKECUDNN_ENGINE_US", "0:20,1:200,2:100,3:400,4:500,5:600,6:700,7:800,11:21"}});
  json d = diffed(a, b);
  for (const auto& c : d["causes"]) EXPECT_NE(c["kind"], "plans") << d.dump(2);
  // The plans' note (another may say that the warm-up's searches ran at another speed: timing).
  int plan_notes = 0;
  for (const auto& n : d["notes"]) {
    plan_notes += n.get<std::string>().find("problems ran with other plans, as the benchmark's choice between plans "
                                            "that measured alike") != std::string::npos;
  }
  EXPECT_EQ(plan_notes, 1) << d["notes"];
}

// The same warm-up searches at another speed (A's timing runs wait 3 ms for the device each, as a
// machine's first process loading cuDNN's kernels cold did on the H100): a note, not a cause.
TEST(Diff, TheSameWarmUpSearchesAtAnotherSpeedAreANote) {
  std::string a = recorded("slow-warm-a", search_job({"--benchmark"}), {},
                           {{"FAKECUDA_DELAY_US", "cudaEventSynchronize:3000"}});
  std::string b = recorded("slow-warm-b", search_job({"--benchmark"}));
  json d = diffed(a, b);
  ASSERT_LT(d["warmup"]["searches_delta_s"].get<double>(), -0.005) << d["warmup"];
  for (const auto& c : d["causes"]) EXPECT_TRUE(c["warmup_searches_s"].is_null()) << c.dump();
  bool noted = false;
  for (const auto& n : d["notes"]) {
    noted = noted || n.get<std::string>().find("cuDNN searches took ") != std::string::npos;
  }
  EXPECT_TRUE(noted) << d.dump(2);
  // Searching more in the warm-up is a cause (here: two more problems, which the workload's cause
  // takes with the warm-up's searches).
  json more = diffed(b, recorded("slow-warm-more", {program("frontend_search"), "--shapes", "5", "--steps", "20",
                                                    "--benchmark"}));
  for (const auto& n : more["notes"]) {
    EXPECT_EQ(n.get<std::string>().find("cuDNN searches took "), std::string::npos) << n;
  }
}

// A side recorded in a capture window (here an NVTX range the job never opens): what it covers is
// said, since its synchronizations per step are of the part kept.
TEST(Diff, PartialCoverageIsSaid) {
  std::string a = recorded("cov-a", search_job({"--benchmark"}));
  std::string b = recorded("cov-b", search_job({"--benchmark"}), {"--window-nvtx", "steps"});
  json d = diffed(a, b);
  EXPECT_TRUE(d["coverage"]["a"].empty()) << d["coverage"];
  ASSERT_EQ(d["coverage"]["b"].size(), 1u) << d["coverage"];
  EXPECT_NE(d["coverage"]["b"][0]["text"].get<std::string>().find("capture window"), std::string::npos);
  RunResult text = run({cuprobe_bin(), "diff", a, b});
  EXPECT_NE(text.out.find("its synchronizations per step are of the part kept"), std::string::npos) << text.out;
}

// PyTorch's version as the shim reads it (torch/version.py beside the torch/lib/libc10.so the
// process mapped: here the libc10 double, in two such layouts), and another PyTorch as the first
// cause of a diff.
TEST(Diff, AnotherPyTorchIsTheCause) {
  auto with_torch = [](const std::string& tag, const std::string& version) {
    std::string site = fresh_dir("diff-torch-" + tag);
    std::filesystem::create_directories(site + "/torch/lib");
    std::filesystem::copy_file(fake_dir('a') + "/libc10.so", site + "/torch/lib/libc10.so");
    std::ofstream(site + "/torch/version.py") << "from typing import Optional\n\n__all__ = ['__version__']\n"
                                              << "__version__ = '" << version << "'\ndebug = False\n";
    std::string dir = site + "/run";
    Env env = {{"LD_LIBRARY_PATH", site + "/torch/lib"}, {"FAKECUDA_MEM", std::to_string(1ull << 30)}};
    RunResult r = record(dir, {program("expandable_oom"), std::to_string(4ull << 30)}, shim_env(env), {"-q"});
    EXPECT_EQ(r.status, 1) << r.err;  // the out-of-memory it imitates
    return dir;
  };
  std::string a = with_torch("a", "2.10.0+cu128");
  std::string b = with_torch("b", "2.11.0+cu130");
  auto procs = of_type(dump(b), "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["library_versions"]["torch"], "2.11.0+cu130") << procs[0];
  json d = diffed(a, b);
  ASSERT_FALSE(d["causes"].empty()) << d.dump(2);
  EXPECT_EQ(d["causes"][0]["what"], "PyTorch: 2.10.0+cu128 in A, 2.11.0+cu130 in B") << d.dump(2);
  EXPECT_EQ(d["causes"].size(), 1u) << d.dump(2);  // nothing else differs
}

// Rank 2 runs with cudnn.benchmark off. The ranks' steps are set apart by other work (--step-ms
// 0, 1, 2, 4) so that rank 2's step is the median of the four: the typical process must still be
// one configured as most are (by step time alone it was rank 2, and every other rank was blamed).
TEST(Diff, RanksNameTheRankThatDiffersWithItsCause) {
  std::string job = fresh_dir("diff-ranks") + "/run";
  const char* step_ms[] = {"0", "1", "2", "4"};
  for (int r = 0; r < 4; ++r) {
    std::vector<std::string> extra = {"--step-ms", step_ms[r]};
    if (r != 2) extra.push_back("--benchmark");
    std::vector<std::string> argv = search_job(extra);
    Env env = kEngines;
    env.emplace_back("RANK", std::to_string(r));
    ASSERT_EQ(record(job, argv, shim_env(env), {"-q", "--append"}).status, 0);
  }
  RunResult r = run({cuprobe_bin(), "diff", "--ranks", "--json", job});
  ASSERT_EQ(r.status, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["format"], "cuprobe-diff-ranks/1");
  EXPECT_EQ(d["processes"], 4);
  bool found = false;
  for (const auto& p : d["ranks"]) {
    bool config = !p["causes"].empty() && p["causes"][0]["kind"] == "configuration";
    if (p["rank"] == 2) {
      found = true;
      ASSERT_TRUE(config) << p.dump(2);
      EXPECT_EQ(p["causes"][0]["what"],
                "cudnn.benchmark: on (timed searches) in the typical process, off (heuristics) here");
    } else {
      EXPECT_FALSE(config) << p.dump(2);
    }
  }
  EXPECT_TRUE(found) << d.dump(2);
  RunResult text = run({cuprobe_bin(), "diff", "--ranks", job});
  EXPECT_NE(text.out.find("rank 2 (pid "), std::string::npos) << text.out;
  RunResult two = run({cuprobe_bin(), "diff", "--ranks", job, job});
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.err.find("--ranks takes one run"), std::string::npos) << two.err;
}

TEST(Diff, PlanFilesAreComparedPlanByPlan) {
  std::string a = recorded("plans-a", search_job({"--benchmark"}));
  std::string off = recorded("plans-off", search_job({}));
  std::string more =
      recorded("plans-more", {program("frontend_search"), "--shapes", "5", "--steps", "20", "--benchmark"});
  std::string dir = fresh_dir("diff-plan-files");
  for (const auto& [from, name] :
       std::vector<std::pair<std::string, std::string>>{{a, "a"}, {off, "off"}, {more, "more"}}) {
    RunResult e = run({cuprobe_bin(), "plans", "export", "-q", "-o", dir + "/" + name + ".json", from});
    ASSERT_EQ(e.status, 0) << e.err;
  }
  json d = diffed(dir + "/a.json", dir + "/off.json");
  EXPECT_EQ(d["format"], "cuprobe-diff-plans/1");
  EXPECT_EQ(d["changed"].size(), 3u) << d.dump(2);  // the benchmark's winners against the heuristic's picks
  EXPECT_EQ(d["same"], 0);
  json m = diffed(dir + "/a.json", dir + "/more.json");
  EXPECT_EQ(m["same"], 3);
  EXPECT_EQ(m["only_in_b"].size(), 2u);
  EXPECT_TRUE(m["only_in_a"].empty());
  // A plan file against a run: the run's plans as plans export gives them, either way round.
  json against_run = diffed(dir + "/a.json", off);
  EXPECT_EQ(against_run["b_exported_from"], off);
  json both_files = d;
  EXPECT_EQ(against_run["changed"], both_files["changed"]);
  json run_first = diffed(more, dir + "/a.json");
  EXPECT_EQ(run_first["a_exported_from"], more);
  EXPECT_EQ(run_first["only_in_a"].size(), 2u);
  RunResult text = run({cuprobe_bin(), "diff", dir + "/a.json", off});
  EXPECT_NE(text.out.find("B: the plans of " + off + " as cuprobe plans export gives them"), std::string::npos)
      << text.out;
  // A run that pinned the file's plans ran those plans (its pinned selections count here, where
  // an export leaves them out).
  std::string pinned = recorded("plans-pinned", search_job({"--benchmark"}), {"--pin-plans", dir + "/a.json"});
  json same_plans = diffed(dir + "/a.json", pinned);
  EXPECT_EQ(same_plans["same"], 3) << same_plans.dump(2);
  EXPECT_TRUE(same_plans["changed"].empty()) << same_plans.dump(2);
  // A run with no plan selection (no cuDNN work) is named.
  std::string none = recorded("plans-none", {program("fault_probe"), "malloc:100"});
  RunResult mixed = run({cuprobe_bin(), "diff", dir + "/a.json", none});
  EXPECT_EQ(mixed.status, 2);
  EXPECT_NE(mixed.err.find("no plan selection in " + none), std::string::npos) << mixed.err;
}

TEST(Diff, BadOperandsAreNamed) {
  RunResult one = run({cuprobe_bin(), "diff", "/tmp"});
  EXPECT_EQ(one.status, 2);
  EXPECT_NE(one.err.find("1 runs given; usage: cuprobe diff A B"), std::string::npos) << one.err;
  std::string empty = fresh_dir("diff-empty");
  RunResult none = run({cuprobe_bin(), "diff", empty, empty});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no trace files"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace cuprobe::test
