// The shim against NCCL (nccl_hooks.h), reached from a library that needs it, as PyTorch's
// libtorch_cuda.so needs libnccl.so.2: NCCL loaded privately (RTLD_LOCAL) or into the global scope,
// each communicator set-up passed on unchanged (the 128-byte unique id by value) and recorded with
// its size and rank, the largest communicator's rank and size as process properties, and
// `cuprobe analyze` naming the process by that rank when no RANK variable is set (issue 13).
#include <gtest/gtest.h>

#include "support/run.h"

namespace cuprobe::test {
namespace {

using nlohmann::json;

// nccl_user.cpp: six set-ups (pair, world, split, no-color split, scalable, damaged id), then the
// rank the double reports for the communicators that exist.
const char* kPrinted = "0 0 0 0 0 4 ranks 1 3 1 -1 0\n";

void expect_traced(const std::string& tag, const std::string& mode) {
  SCOPED_TRACE(mode);
  std::vector<std::string> argv = {program("nccl_init"), program("libnccl_user.so"), mode};
  RunResult plain = run(argv);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.out, kPrinted);

  std::string dir = fresh_dir(tag);
  RunResult r = record(dir, argv);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, kPrinted);  // every call reached the double, the unique id intact
  auto lines = dump(dir);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["rank"], -1);
  // The world (4 ranks) set up after a 2-rank pair; later, smaller communicators change nothing.
  EXPECT_EQ(procs[0]["nccl_rank"], 3);
  EXPECT_EQ(procs[0]["nccl_world_size"], 4);
  EXPECT_EQ(procs[0]["stats"]["missing_symbols"], 0);
  EXPECT_EQ(procs[0]["library_versions"]["nccl"], "2.27.3") << procs[0];  // ncclGetVersion's 22703

  auto init = of_type(lines, "call", "ncclCommInitRank");
  ASSERT_EQ(init.size(), 2u);
  EXPECT_EQ(init[0]["ret"], 0);
  EXPECT_EQ(init[0]["nranks"], 2);
  EXPECT_EQ(init[0]["rank"], 1);
  EXPECT_NE(init[0]["comm"], "0x0");
  EXPECT_EQ(init[1]["ret"], 4);  // ncclInvalidArgument: the damaged id, the failure passed on
  EXPECT_EQ(init[1]["comm"], "0x0");
  auto config = of_type(lines, "call", "ncclCommInitRankConfig");
  ASSERT_EQ(config.size(), 1u);
  EXPECT_EQ(config[0]["nranks"], 4);
  EXPECT_EQ(config[0]["rank"], 3);
  auto split = of_type(lines, "call", "ncclCommSplit");
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0]["nranks"], 2);  // asked of the double's ncclCommCount / ncclCommUserRank
  EXPECT_EQ(split[0]["rank"], 1);
  EXPECT_EQ(split[0]["parent"], config[0]["comm"]);
  EXPECT_EQ(split[0]["key"], 5);
  EXPECT_EQ(split[1]["color"], -1);
  EXPECT_EQ(split[1]["comm"], "0x0");
  EXPECT_EQ(split[1]["nranks"], -1);
  auto scalable = of_type(lines, "call", "ncclCommInitRankScalable");
  ASSERT_EQ(scalable.size(), 1u);
  EXPECT_EQ(scalable[0]["nranks"], 2);
  EXPECT_EQ(scalable[0]["rank"], 0);
  EXPECT_EQ(scalable[0]["ids"], 2);
  for (const auto& a : of_type(lines, "api")) {
    if (a["name"].get<std::string>().rfind("nccl", 0) == 0) {
      EXPECT_EQ(a["library"], "nccl") << a;
    }
  }
}

TEST(NcclCapture, PrivatelyLoadedNcclIsTracedAndNamesTheRank) { expect_traced("nccl-local", "local"); }

TEST(NcclCapture, GloballyLoadedNcclIsTracedAndNamesTheRank) { expect_traced("nccl-global", "global"); }

json analyze_summary(const std::string& dir) {
  RunResult a = run({cuprobe_bin(), "analyze", "--json", dir});
  EXPECT_LE(a.status, 1) << a.err;
  json report = json::parse(a.out, nullptr, false);
  EXPECT_FALSE(report.is_discarded()) << a.out;
  return report.is_discarded() ? json() : report["summary"];
}

// A communicator set-up made to fail by name (issue 32): the application gets NCCL's error, the
// trace and the alert say the rule did it, naming the error.
TEST(NcclCapture, ASetUpFailsWithTheNcclErrorAFaultRuleNames) {
  std::vector<std::string> argv = {program("nccl_init"), program("libnccl_user.so")};
  std::string dir = fresh_dir("nccl-fault");
  RunResult r = record(dir, argv, {}, {"--fault", "ncclCommInitRank:ncclSystemError,nth=1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 2), "2 ") << r.out;  // ncclSystemError for the pair's set-up
  EXPECT_NE(r.err.find("made ncclCommInitRank fail with 2 (ncclSystemError)"), std::string::npos) << r.err;
  auto init = of_type(dump(dir), "call", "ncclCommInitRank");
  ASSERT_EQ(init.size(), 2u);
  EXPECT_EQ(init[0]["ret"], 2);
  EXPECT_EQ(init[0]["injected"], "rule1");
  EXPECT_EQ(init[0]["comm"], "0x0");
  EXPECT_FALSE(init[1].contains("injected"));
}

// Collectives (issue 32): recorded with their bytes, count, type and communicator; a rule fails a
// chosen one by kind, count or size, or delays it (a hang for watchdog tests) and lets it run.
TEST(NcclCapture, CollectivesAreRecordedAndFaultRulesFailOrDelayThem) {
  std::vector<std::string> argv = {program("nccl_init"), program("libnccl_user.so"), "steps:4"};
  std::string dir = fresh_dir("nccl-collectives");
  RunResult r = record(dir, argv, {},
                       {"--fault", "ncclAllReduce:ncclRemoteError,nth=2", "--fault",
                        "ncclAllReduce|ncclAllGather:DELAY,delay=300ms,size>=4MiB,nth=3", "--fault",
                        "ncclAllGather:ncclSystemError,size>=1MiB"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(r.out.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 4u) << r.out;
  // ncclRemoteError at once: no 300 ms hold (a loaded machine, or TSan, can make the call itself
  // take a millisecond: seen under TSan with another test running).
  int failed_ret = -1, failed_wait = -1;
  ASSERT_EQ(std::sscanf(lines[1].c_str(), "step 1 allreduce %d %d", &failed_ret, &failed_wait), 2) << lines[1];
  EXPECT_EQ(failed_ret, 6) << lines[1];
  EXPECT_LT(failed_wait, 100) << lines[1];
  // The third allreduce rule 2 saw (rule 1 took the second): step 3's, after 300 ms, then run.
  int waited = -1, ret = -1;
  ASSERT_EQ(std::sscanf(lines[3].c_str(), "step 3 allreduce %d %d", &ret, &waited), 2) << lines[3];
  EXPECT_EQ(ret, 0);
  EXPECT_GE(waited, 300);
  for (const auto& l : lines) EXPECT_NE(l.find("allgather 0"), std::string::npos) << l;  // 256 KiB: below size>=1MiB
  auto calls = of_type(dump(dir), "call", "ncclAllReduce");
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0]["size"], 4u << 20);  // 1 Mi float32
  EXPECT_EQ(calls[0]["count"], 1u << 20);
  EXPECT_EQ(calls[0]["dtype"], 7);
  EXPECT_EQ(calls[1]["injected"], "rule1");
  EXPECT_EQ(calls[3]["injected"], "rule2");
  EXPECT_EQ(calls[3]["ret"], 0);
  EXPECT_EQ(of_type(dump(dir), "call", "ncclAllGather").size(), 4u);
  // The end of the run says which calls failed and which were only held.
  EXPECT_NE(r.err.find("fault mode: 1 call failed on purpose (rule1 1, rule3 0)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fault mode: 1 call held on purpose, then run as usual (rule2 1)"), std::string::npos) << r.err;
  // The analysis: a held call failed nothing, so the application went on (not "retried").
  nlohmann::json a = analyze_json({dir});
  ASSERT_EQ(a["summary"]["faults"].size(), 3u) << a["summary"].dump(1);
  EXPECT_EQ(a["summary"]["faults"][1]["outcomes"], nlohmann::json({{"went on after the held call", 1}}))
      << a["summary"]["faults"].dump(1);
}

// comm-size= (issue 32): a rule aimed at the 2-rank group's allreduces leaves the world's alone;
// set-ups are picked by the size they are asked for.
TEST(NcclCapture, CommSizePicksTheCommunicator) {
  std::string dir = fresh_dir("nccl-comm-size");
  RunResult r = record(dir, {program("nccl_init"), program("libnccl_user.so"), "groups:3"}, {},
                       {"-q", "--fault", "ncclAllReduce:ncclRemoteError,comm-size=2,nth=2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "step 0 world 0 half 0\nstep 1 world 0 half 6\nstep 2 world 0 half 0\n");
  auto calls = of_type(dump(dir), "call", "ncclAllReduce");
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[3]["injected"], "rule1");

  std::string init_dir = fresh_dir("nccl-comm-size-init");
  RunResult init = record(init_dir, {program("nccl_init"), program("libnccl_user.so")}, {},
                          {"-q", "--fault", "ncclCommInitRank|ncclCommInitRankConfig:ncclSystemError,comm-size=4"});
  ASSERT_EQ(init.status, 0) << init.err;
  // The pair (2 ranks) is set up, the world (4) is not, so its splits fail too.
  EXPECT_EQ(init.out.substr(0, 4), "0 2 ") << init.out;

  // Calls without a communicator, and a split (whose size is known only once it is made), are refused.
  for (const char* bad : {"alloc:OOM,comm-size=2", "ncclCommSplit:ncclSystemError,comm-size=2"}) {
    RunResult refused = record(fresh_dir("nccl-comm-size-bad"), {"true"}, {}, {"-q", "--fault", bad});
    EXPECT_EQ(refused.status, 2) << bad;
    EXPECT_NE(refused.err.find("comm-size picks NCCL calls by their communicator's size"), std::string::npos)
        << refused.err;
  }
}

// A rank whose watchdog gives up (issue 32): its allreduce fails, another thread aborts the
// communicator, the process dies by SIGABRT. The trace records the abort (and a clean run's
// destroy); the chaos summary says when the communicator was aborted and names the signal.
TEST(NcclCapture, AnAbortedCommunicatorIsHowTheRankEnded) {
  std::string dir = fresh_dir("nccl-watchdog");
  RunResult r = record(dir, {program("nccl_init"), program("libnccl_user.so"), "watchdog"}, {},
                       {"-q", "--fault", "ncclAllReduce:ncclRemoteError,nth=1"});
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "allreduce 6\n");
  auto lines = dump(dir);
  auto aborts = of_type(lines, "call", "ncclCommAbort");
  ASSERT_EQ(aborts.size(), 1u);
  auto inits = of_type(lines, "call", "ncclCommInitRankConfig");
  ASSERT_EQ(inits.size(), 1u);
  EXPECT_EQ(aborts[0]["comm"], inits[0]["comm"]);
  EXPECT_NE(aborts[0]["tid"], inits[0]["tid"]) << "the watchdog's thread";
  json s = analyze_summary(dir);
  ASSERT_TRUE(s["chaos"].is_object()) << s.dump(2);
  ASSERT_EQ(s["chaos"]["ends"].size(), 1u) << s["chaos"];
  const json& end = s["chaos"]["ends"][0];
  EXPECT_EQ(end["ended"], "killed by signal 6 (SIGABRT)");
  ASSERT_TRUE(end["nccl_abort_after_s"].is_number()) << end;
  EXPECT_GE(end["nccl_abort_after_s"].get<double>(), 0.0);
  EXPECT_NE(end.value("meaning", "").find("its NCCL watchdog gave up"), std::string::npos) << end;
  RunResult text = run({cuprobe_bin(), "analyze", dir});
  EXPECT_NE(text.out.find("killed by signal 6 (SIGABRT)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("it aborted its NCCL communicator"), std::string::npos) << text.out;

  // Without the fault the allreduce works and the communicator is destroyed, not aborted.
  std::string clean = fresh_dir("nccl-watchdog-clean");
  RunResult ok = record(clean, {program("nccl_init"), program("libnccl_user.so"), "watchdog"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  auto clean_lines = dump(clean);
  EXPECT_EQ(of_type(clean_lines, "call", "ncclCommDestroy").size(), 1u) << ok.out << ok.err << clean_lines.size();
  EXPECT_TRUE(of_type(clean_lines, "call", "ncclCommAbort").empty());
}

TEST(NcclCapture, AnalyzeNamesTheProcessByItsNcclRankUnlessRankIsSet) {
  std::vector<std::string> argv = {program("nccl_init"), program("libnccl_user.so")};
  std::string dir = fresh_dir("nccl-analyze");
  ASSERT_EQ(record(dir, argv).status, 0);
  json s = analyze_summary(dir);
  EXPECT_EQ(s["ranks"], json::array({3}));
  ASSERT_EQ(s["per_process"].size(), 1u);
  EXPECT_EQ(s["per_process"][0]["rank"], 3);
  EXPECT_EQ(s["per_process"][0]["rank_source"], "nccl");
  EXPECT_EQ(s["rank_sources"], json::array({"nccl"}));
  RunResult text = run({cuprobe_bin(), "analyze", dir});
  EXPECT_NE(text.out.find("ranks: 3 (from NCCL communicators)"), std::string::npos) << text.out;

  // A launcher's RANK wins over what NCCL said.
  std::string env_dir = fresh_dir("nccl-analyze-env");
  ASSERT_EQ(record(env_dir, argv, {{"RANK", "7"}}).status, 0);
  json e = analyze_summary(env_dir);
  EXPECT_EQ(e["ranks"], json::array({7}));
  EXPECT_EQ(e["per_process"][0]["rank_source"], "env");
}

}  // namespace
}  // namespace cuprobe::test
