// Fault mode against the test doubles: every trigger and error kind, the error state after an
// injected CUDA runtime error, the memory cap, determinism across runs and threads, replays,
// malformed plans, and what `cuprobe analyze` makes of injected failures.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Traced {
  RunResult r;
  std::string dir;
  std::vector<json> lines;
  std::vector<std::string> out;  // the program's own lines
  std::vector<json> calls(const std::string& api) const { return of_type(lines, "call", api); }
  std::vector<json> injected() const {
    std::vector<json> v;
    for (const auto& c : of_type(lines, "call"))
      if (c.contains("injected")) v.push_back(c);
    return v;
  }
  json rule(const std::string& name) const {
    for (const auto& l : of_type(lines, "fault_rule"))
      if (l["name"] == name) return l;
    return json();
  }
};

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) v.push_back(line);
  return v;
}

Traced record_with(const std::string& tag, const std::vector<std::string>& opts, const std::vector<std::string>& argv,
                const Env& env = {}) {
  Traced run;
  run.dir = fresh_dir(tag);
  std::vector<std::string> o = {"-q"};
  o.insert(o.end(), opts.begin(), opts.end());
  run.r = record(run.dir, argv, shim_env(env), o);
  if (run.r.status != 2 && fs::exists(run.dir)) run.lines = dump(run.dir);
  run.out = split_lines(run.r.out);
  return run;
}

Traced probe(const std::string& tag, const std::vector<std::string>& opts, const std::vector<std::string>& steps,
          const Env& env = {}) {
  std::vector<std::string> argv = {program("fault_probe")};
  argv.insert(argv.end(), steps.begin(), steps.end());
  return record_with(tag, opts, argv, env);
}

std::string codes(const Traced& run, const std::string& api) {
  std::string s;
  for (const auto& c : run.calls(api)) s += (s.empty() ? "" : " ") + std::to_string(c["ret"].get<int>());
  return s;
}

TEST(Faults, CountTriggersPickTheirCalls) {
  std::vector<std::string> steps(10, "malloc:100");
  struct Case {
    std::string rule, want;
  } cases[] = {
      {"alloc:OOM,nth=3", "0 0 2 0 0 0 0 0 0 0"},     {"alloc:OOM,every=4", "0 0 0 2 0 0 0 2 0 0"},
      {"alloc:OOM,first=2", "2 2 0 0 0 0 0 0 0 0"},   {"alloc:OOM,after=8", "0 0 0 0 0 0 0 0 2 2"},
      {"alloc:OOM,at=1+10", "2 0 0 0 0 0 0 0 0 2"},   {"alloc:OOM,every=2,max=2", "0 2 0 2 0 0 0 0 0 0"},
      {"alloc:OOM,from=1h", "0 0 0 0 0 0 0 0 0 0"},   {"alloc:OOM,from=0s,until=1h,nth=5", "0 0 0 0 2 0 0 0 0 0"},
  };
  for (const auto& c : cases) {
    Traced run = probe("trigger", {"--fault", c.rule}, steps);
    ASSERT_EQ(run.r.status, 0) << c.rule << run.r.err;
    EXPECT_EQ(codes(run, "cudaMalloc"), c.want) << c.rule;
    // The program saw exactly what the trace says it saw.
    std::string seen;
    for (const auto& l : run.out) seen += (seen.empty() ? "" : " ") + l.substr(11, l.find(' ', 11) - 11);
    EXPECT_EQ(seen, c.want) << c.rule;
    json rule = run.rule("rule1");
    ASSERT_FALSE(rule.is_null()) << c.rule;
    EXPECT_EQ(rule["injected"], run.injected().size()) << c.rule;
    EXPECT_EQ(rule["matched"], c.rule.find("from=1h") != std::string::npos ? 0 : 10) << c.rule;
  }
}

TEST(Faults, FiltersSelectCalls) {
  // size, device, comm, pid, rank
  Traced sized = probe("size", {"--fault", "alloc:OOM,size>=1MiB"}, {"malloc:1000", "malloc:2097152", "malloc:1048576"});
  EXPECT_EQ(codes(sized, "cudaMalloc"), "0 2 2");
  EXPECT_EQ(sized.rule("rule1")["matched"], 2);
  Traced dev = probe("device", {"--fault", "alloc:OOM,device=1"}, {"malloc:10", "device:1", "malloc:10", "device:0", "malloc:10"});
  EXPECT_EQ(codes(dev, "cudaMalloc"), "0 2 0");
  Traced comm = probe("comm", {"--fault", "alloc:OOM,comm=fault_probe"}, {"malloc:10"});
  EXPECT_EQ(codes(comm, "cudaMalloc"), "2");
  Traced other = probe("comm2", {"--fault", "alloc:OOM,comm=python3"}, {"malloc:10"});
  EXPECT_EQ(codes(other, "cudaMalloc"), "0");
  EXPECT_TRUE(of_type(other.lines, "fault_rule").empty()) << "a rule for other processes is not in force here";
  Traced pid = probe("pid", {"--fault", "alloc:OOM,pid=1"}, {"malloc:10"});
  EXPECT_EQ(codes(pid, "cudaMalloc"), "0");
  Traced rank = probe("rank", {"--fault", "alloc:OOM,rank=3"}, {"malloc:10"}, {{"RANK", "3"}});
  EXPECT_EQ(codes(rank, "cudaMalloc"), "2");
  Traced rank2 = probe("rank2", {"--fault", "alloc:OOM,rank=3"}, {"malloc:10"}, {{"RANK", "2"}});
  EXPECT_EQ(codes(rank2, "cudaMalloc"), "0");
  // Rules are tried in order; the first that fires replaces the call, later rules never see it.
  Traced order = probe("order", {"--fault", "alloc:OOM,nth=2,name=a", "--fault", "alloc:77,name=b"},
                    {"malloc:1", "malloc:1", "malloc:1"});
  EXPECT_EQ(codes(order, "cudaMalloc"), "77 2 77");
  EXPECT_EQ(order.rule("a")["matched"], 3);
  EXPECT_EQ(order.rule("b")["matched"], 2);
}

TEST(Faults, AnInjectedCallRunsNothingAndTheErrorStateMatchesTheRuntime) {
  // The double's memory: an injected allocation takes none of it.
  Traced run = probe("state", {"--fault", "cudaMalloc:OOM,nth=2"},
                  {"meminfo", "malloc:4096", "meminfo", "malloc:4096", "meminfo", "peek", "peek", "last", "last",
                   "malloc:4096", "last"});
  ASSERT_EQ(run.r.status, 0) << run.r.err;
  ASSERT_EQ(run.out.size(), 11u) << run.r.out;
  auto free_of = [](const std::string& l) {
    std::istringstream in(l);
    std::string op;
    int ret;
    uint64_t free_bytes = 0;
    in >> op >> ret >> free_bytes;
    return free_bytes;
  };
  EXPECT_EQ(free_of(run.out[0]) - free_of(run.out[2]), 4096u);
  EXPECT_EQ(free_of(run.out[2]), free_of(run.out[4])) << "the injected cudaMalloc allocated nothing";
  EXPECT_EQ(run.out[3], "malloc 4096 2 null");
  EXPECT_EQ(run.out[5], "peek 2");
  EXPECT_EQ(run.out[6], "peek 2") << "peek leaves the error in place";
  EXPECT_EQ(run.out[7], "last 2");
  EXPECT_EQ(run.out[8], "last 0") << "cudaGetLastError clears it";
  EXPECT_EQ(run.out[10], "last 0");
  auto inj = run.injected();
  ASSERT_EQ(inj.size(), 1u);
  EXPECT_EQ(inj[0]["api"], "cudaMalloc");
  EXPECT_EQ(inj[0]["injected"], "rule1");
  EXPECT_EQ(inj[0]["fault_k"], 2);
  EXPECT_EQ(inj[0]["size"], 4096);

  // A genuine failure after the injected one is the runtime's last error.
  Traced later = probe("state2", {"--fault", "cudaMalloc:OOM,nth=1"}, {"malloc:1", "sync", "last", "last"},
                    {{"FAKECUDA_FAIL", "cudaDeviceSynchronize:999"}});
  ASSERT_EQ(later.out.size(), 4u) << later.r.out << later.r.err;
  EXPECT_EQ(later.out[1], "sync 999");
  EXPECT_EQ(later.out[2], "last 999");
  EXPECT_EQ(later.out[3], "last 0");
  // An injected error after a genuine one is the newer.
  Traced newer = probe("state3", {"--fault", "sync:EXECUTION_FAILED"}, {"malloc:99999999999999", "sync", "last", "last"},
                    {{"FAKECUDA_MEM", "1000"}});
  ASSERT_EQ(newer.out.size(), 4u) << newer.r.out << newer.r.err;
  EXPECT_EQ(newer.out[0], "malloc 99999999999999 2 null");
  EXPECT_EQ(newer.out[1], "sync 719");
  EXPECT_EQ(newer.out[2], "last 719");
  EXPECT_EQ(newer.out[3], "last 0");
}

// rank=random (issue 32): one rank of the job, the same for every process for one seed (cuprobe
// record picks one when none is given and writes it into the rule); the analysis says where the
// rule was in force.
TEST(Faults, RandomRankAimsAtOneRankOfTheJob) {
  const int world = 4;
  std::string job = fresh_dir("fault-random-rank") + "/run";
  std::vector<int> failed;
  for (int r = 0; r < world; ++r) {
    Env env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(world)}};
    RunResult rr = record(job, {program("fault_probe"), "malloc:10"}, shim_env(env),
                          {"-q", "--append", "--fault", "alloc:OOM,rank=random,seed=7"});
    ASSERT_EQ(rr.status, 0) << rr.err;
    if (rr.out.rfind("malloc 10 2 ", 0) == 0) failed.push_back(r);
  }
  ASSERT_EQ(failed.size(), 1u);  // one rank of the four, the same one for every process
  const int aimed = failed[0];
  auto a = analyze_json({job});
  json rule = a["summary"]["faults"][0];
  EXPECT_EQ(rule["ranks"], json::array({aimed})) << rule;
  EXPECT_EQ(rule["injected"], 1) << rule;
  // How the job went on after it: the first injection (where, what) and how each rank ended.
  const json& chaos = a["summary"]["chaos"];
  EXPECT_EQ(chaos["first_injection"]["rank"], aimed) << chaos;
  EXPECT_EQ(chaos["first_injection"]["api"], "cudaMalloc") << chaos;
  EXPECT_EQ(chaos["first_injection"]["ret"], 2) << chaos;
  ASSERT_EQ(chaos["ends"].size(), 4u) << chaos;
  for (const auto& e : chaos["ends"]) {
    EXPECT_EQ(e["ended"], "exited") << e;
    EXPECT_EQ(e["injected"], e["rank"] == aimed ? 1 : 0) << e;
  }
  RunResult text = run({cuprobe_bin(), "analyze", job});
  EXPECT_NE(text.out.find("in force on rank " + std::to_string(aimed) + ":"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("after the first injection (cudaMalloc on rank " + std::to_string(aimed)), std::string::npos)
      << text.out;
  // Without a seed, record picks one and writes it into the rule the processes get.
  Traced picked = probe("fault-random-seed", {"--fault", "alloc:OOM,rank=random"}, {"malloc:10"},
                        {{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_EQ(codes(picked, "cudaMalloc"), "2");  // a job of one rank: that one
  auto rules = of_type(picked.lines, "fault_rule");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_NE(rules[0]["rule"].get<std::string>().find("rank=random,seed="), std::string::npos) << rules[0];
}

// What the endings say (issue 32): rank 0 runs on, rank 1 gets the fault and exits, a launcher
// stops rank 0 (SIGTERM) and starts a new process of rank 1. The analysis names the stop and the
// restart for what they are.
TEST(Faults, TheAnalysisTellsAStoppedRankAndARestartedOne) {
  std::string job = fresh_dir("fault-restart") + "/run";
  ASSERT_EQ(record(job, {program("fault_probe"), "malloc:10"}, shim_env({{"RANK", "9"}}), {"-q"}).status, 0);
  Env rank0 = shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", job}, {"RANK", "0"}, {"WORLD_SIZE", "2"}});
  Child c = spawn({program("killable"), "200"}, rank0);
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(c.read_line(60000), "ready 200");
  Env rank1 = shim_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  RunResult hit =
      record(job, {program("fault_probe"), "malloc:10"}, rank1, {"-q", "--append", "--fault", "alloc:OOM,rank=1"});
  ASSERT_EQ(hit.status, 0) << hit.err;
  ASSERT_EQ(hit.out.rfind("malloc 10 2 ", 0), 0u) << hit.out;
  kill(c.pid, SIGTERM);
  EXPECT_EQ(c.wait(), 128 + SIGTERM);
  ASSERT_EQ(record(job, {program("fault_probe"), "malloc:10"}, rank1, {"-q", "--append"}).status, 0);
  auto a = analyze_json({job});
  const json& chaos = a["summary"]["chaos"];
  ASSERT_TRUE(chaos.is_object()) << a["summary"];
  std::map<std::string, json> by;  // "rank/started later"
  for (const auto& e : chaos["ends"]) {
    by[std::to_string(e["rank"].get<int>()) + (e["started_after_s"].is_number() ? "+" : "")] = e;
  }
  ASSERT_TRUE(by.count("0") && by.count("1") && by.count("1+")) << chaos;
  EXPECT_EQ(by["0"]["ended"], "killed by signal 15 (SIGTERM)");
  EXPECT_NE(by["0"]["meaning"].get<std::string>().find("stopped from outside after the fault"), std::string::npos)
      << by["0"];
  EXPECT_TRUE(by["1"]["meaning"].is_null()) << by["1"];
  EXPECT_EQ(by["1"]["injected"], 1);
  EXPECT_NE(by["1+"]["meaning"].get<std::string>().find("a new process of rank 1"), std::string::npos) << by["1+"];
  EXPECT_FALSE(by.count("9+")) << "a process that ended before the fault is not a restart";
  RunResult text = run({cuprobe_bin(), "analyze", job});
  EXPECT_NE(text.out.find("a launcher's restart"), std::string::npos) << text.out;
}

// A process whose launcher set no RANK (torch.multiprocessing.spawn) is aimed at by the rank of
// its NCCL communicator, from the moment one is set up: nccl_init's world communicator gives it
// rank 3 of 4, then it splits it.
TEST(Faults, RankRulesUseTheNcclRankWhereNoLauncherSaidOne) {
  std::vector<std::string> argv = {program("nccl_init"), program("libnccl_user.so")};
  Traced hit = record_with("fault-nccl-rank", {"--fault", "ncclCommSplit:ncclRemoteError,rank=3"}, argv);
  ASSERT_EQ(hit.r.status, 0) << hit.r.err;
  auto splits = hit.calls("ncclCommSplit");
  ASSERT_EQ(splits.size(), 2u);
  EXPECT_EQ(splits[0]["ret"], 6);                         // ncclRemoteError
  EXPECT_EQ(hit.calls("ncclCommInitRank")[0]["ret"], 0);  // before the world communicator: rank unknown
  Traced miss = record_with("fault-nccl-rank2", {"--fault", "ncclCommSplit:ncclRemoteError,rank=2"}, argv);
  EXPECT_EQ(miss.calls("ncclCommSplit")[0]["ret"], 0);
  EXPECT_TRUE(of_type(miss.lines, "fault_rule").empty());
  // The point-to-point pair set up first made it rank 1 for a moment; the world's rank replaced it.
  Traced pair = record_with("fault-nccl-rank1", {"--fault", "ncclCommSplit:ncclRemoteError,rank=1"}, argv);
  EXPECT_EQ(pair.calls("ncclCommSplit")[0]["ret"], 0);
}

// sticky (issue 32): once the rule fires, the process's context is as if corrupted: every later
// faultable call on that device fails with the error, and cudaGetLastError keeps reporting it.
TEST(Faults, AStickyFaultFailsEveryLaterCallAsACorruptedContextDoes) {
  Traced run = probe("sticky", {"--fault", "alloc:cudaErrorIllegalAddress,nth=2,sticky"},
                     {"malloc:10", "malloc:10", "malloc:10", "last", "last", "peek", "sync", "host:10"});
  ASSERT_EQ(run.r.status, 0) << run.r.err;
  std::vector<std::string> want = {"malloc 10 0 set", "malloc 10 700 null", "malloc 10 700 null", "last 700",
                                   "last 700",        "peek 700",           "sync 700",           "host 10 700 null"};
  EXPECT_EQ(run.out, want);
  json rule = run.rule("rule1");
  EXPECT_EQ(rule["injected"], 4) << rule;  // the malloc it fired on, then the malloc, sync and host allocation
  // Without sticky, only the call it fires on.
  Traced once = probe("not-sticky", {"--fault", "alloc:cudaErrorIllegalAddress,nth=2"},
                      {"malloc:10", "malloc:10", "malloc:10", "last", "last", "sync"});
  std::vector<std::string> plain = {"malloc 10 0 set", "malloc 10 700 null", "malloc 10 0 set", "last 700", "last 0",
                                    "sync 0"};
  EXPECT_EQ(once.out, plain);
}

TEST(Faults, ErrorKindsReachTheCaller) {
  struct Case {
    std::string rule, step;
    std::string want;
  } cases[] = {{"alloc:OOM", "malloc:8", "malloc 8 2 null"},
               {"cudaMallocAsync:OOM", "async:8", "async 8 2 null"},
               {"host-alloc:OOM", "host:8", "host 8 2 null"},
               {"sync:INTERNAL_ERROR", "sync", "sync 999"},
               {"memcpy:BAD_PARAM", "memcpy:64", "memcpy 64 1"},
               {"cudaDeviceSynchronize:NOT_SUPPORTED", "sync", "sync 801"},
               {"sync:4242", "sync", "sync 4242"}};
  for (const auto& c : cases) {
    Traced run = probe("kind", {"--fault", c.rule}, {c.step});
    ASSERT_EQ(run.out.size(), 1u) << c.rule << run.r.err;
    EXPECT_EQ(run.out[0], c.want) << c.rule;
  }
}

TEST(Faults, MemoryCapRefusesWhatWouldExceedItAndShrinksMemGetInfo) {
  Traced run = probe("cap", {"--mem-cap", "10000"},
                  {"meminfo", "malloc:6000", "meminfo", "malloc:6000", "last", "free", "async:6000", "meminfo",
                   "malloc:5000"});
  ASSERT_EQ(run.r.status, 0) << run.r.err;
  ASSERT_EQ(run.out.size(), 9u) << run.r.out;
  EXPECT_EQ(run.out[0], "meminfo 0 10000 10000");
  EXPECT_EQ(run.out[2], "meminfo 0 4000 10000");
  EXPECT_EQ(run.out[3], "malloc 6000 2 null");
  EXPECT_EQ(run.out[4], "last 2");
  EXPECT_EQ(run.out[6], "async 6000 0 set") << "a free gives its bytes back to the cap";
  EXPECT_EQ(run.out[7], "meminfo 0 4000 10000");
  EXPECT_EQ(run.out[8], "malloc 5000 2 null");
  json cap = run.rule("mem-cap");
  ASSERT_FALSE(cap.is_null());
  EXPECT_EQ(cap["index"], 32);
  EXPECT_EQ(cap["rule"], "10000");
  EXPECT_EQ(cap["matched"], 4);
  EXPECT_EQ(cap["injected"], 2);
  // A percentage of the device's memory (the double's FAKECUDA_MEM), per device.
  Traced pct = probe("cap2", {"--mem-cap", "0=50%"}, {"meminfo", "malloc:600", "device:1", "malloc:600"},
                  {{"FAKECUDA_MEM", "1000"}});
  ASSERT_EQ(pct.out.size(), 4u) << pct.r.out << pct.r.err;
  EXPECT_EQ(pct.out[0], "meminfo 0 500 500");
  EXPECT_EQ(pct.out[1], "malloc 600 2 null");
  EXPECT_EQ(pct.out[3], "malloc 600 0 set") << "device 1 has no cap";
}

TEST(Faults, ADelayedAllocationIsStillWeighedByTheMemoryCap) {
  // DELAY holds each allocation 50 ms and lets it run; the cap still refuses the second 6000 and
  // still counts the first (a delayed allocation once went past the cap uncounted).
  Traced run = probe("cap_delay", {"--mem-cap", "10000", "--fault", "cudaMalloc:DELAY,delay=50ms"},
                     {"malloc:6000", "malloc:6000", "meminfo"});
  ASSERT_EQ(run.r.status, 0) << run.r.err;
  ASSERT_EQ(run.out.size(), 3u) << run.r.out;
  EXPECT_EQ(run.out[0], "malloc 6000 0 set");
  EXPECT_EQ(run.out[1], "malloc 6000 2 null");
  EXPECT_EQ(run.out[2], "meminfo 0 4000 10000");
  EXPECT_EQ(run.rule("mem-cap")["injected"], 1);
  EXPECT_EQ(run.rule("rule1")["injected"], 2) << "both were held";
  auto mallocs = run.calls("cudaMalloc");
  ASSERT_EQ(mallocs.size(), 2u);
  // The second waited before the cap refused it (a record's time is the call's own, after the wait).
  EXPECT_GE(mallocs[1]["ts_ns"].get<uint64_t>() - mallocs[0]["ts_ns"].get<uint64_t>(), 50'000'000u);
  EXPECT_EQ(mallocs[0]["injected"], "rule1");
  EXPECT_EQ(mallocs[1]["injected"], "mem-cap");
}

// Kernel launches take faults (issue 32: a launch failure on one rank), decided before they are
// counted; after a sticky fault every launch fails too, as on a corrupted context.
TEST(Faults, KernelLaunchesFailOnPurposeAndAfterAStickyFault) {
  Traced one = probe("launch", {"--fault", "launch:cudaErrorLaunchFailure,nth=2"},
                     {"launch", "launch", "last", "launch", "last"});
  ASSERT_EQ(one.r.status, 0) << one.r.err;
  EXPECT_EQ(one.out, (std::vector<std::string>{"launch 0", "launch 719", "last 719", "launch 0", "last 0"}));
  auto injected = one.injected();
  ASSERT_EQ(injected.size(), 1u);
  EXPECT_EQ(injected[0]["api"], "cudaLaunchKernel");
  EXPECT_EQ(one.rule("rule1")["matched"], 3);
  Traced sticky = probe("launch-sticky", {"--fault", "sync:cudaErrorIllegalAddress,nth=1,sticky"},
                        {"launch", "sync", "launch", "launch", "last"});
  ASSERT_EQ(sticky.r.status, 0) << sticky.r.err;
  EXPECT_EQ(sticky.out, (std::vector<std::string>{"launch 0", "sync 700", "launch 700", "launch 700", "last 700"}));
  // Without a plan, launches are only counted, as before.
  Traced plain = probe("launch-plain", {}, {"launch", "launch"});
  EXPECT_EQ(plain.out, (std::vector<std::string>{"launch 0", "launch 0"}));
  EXPECT_TRUE(plain.calls("cudaLaunchKernel").empty()) << "counted, not recorded";
}

TEST(Faults, SameSeedSameFaultsAcrossRunsAndThreads) {
  std::vector<std::string> opts = {"--fault", "alloc:OOM,p=0.3,seed=9,scope=thread"};
  Traced a = probe("det_a", opts, {"threads:4:60:64"});
  Traced b = probe("det_b", opts, {"threads:4:60:64"});
  ASSERT_EQ(a.out.size(), 4u) << a.r.err;
  EXPECT_EQ(a.out, b.out) << "the same plan, seed and program inject the same calls";
  // Counted per thread, every thread sees the same sequence whatever the interleaving.
  for (const auto& line : a.out) EXPECT_EQ(line.substr(line.find(':')), a.out[0].substr(a.out[0].find(':')));
  size_t fails = 0;
  for (size_t p = a.out[0].find(" 2"); p != std::string::npos; p = a.out[0].find(" 2", p + 1)) ++fails;
  EXPECT_GT(fails, 8u);
  EXPECT_LT(fails, 30u);
  // Per process (the default), a single thread's sequence repeats too, and another seed differs.
  Traced c = probe("det_c", {"--fault", "alloc:OOM,p=0.3,seed=9"}, {"loop:200:64"});
  Traced d = probe("det_d", {"--fault", "alloc:OOM,p=0.3,seed=9"}, {"loop:200:64"});
  Traced e = probe("det_e", {"--fault", "alloc:OOM,p=0.3,seed=10"}, {"loop:200:64"});
  EXPECT_EQ(c.out, d.out);
  EXPECT_NE(c.out, e.out);
}

TEST(Faults, ReplayInjectsTheRecordedCallsAgain) {
  Traced first = probe("replay_a", {"--fault", "alloc:OOM,p=0.25,seed=3", "--mem-cap", "5000"}, {"loop:120:64", "malloc:6000"});
  ASSERT_EQ(first.r.status, 0) << first.r.err;
  ASSERT_GT(first.injected().size(), 10u);
  Traced again = probe("replay_b", {"--replay-faults", first.dir}, {"loop:120:64", "malloc:6000"});
  ASSERT_EQ(again.r.status, 0) << again.r.err;
  EXPECT_EQ(first.out, again.out);
  EXPECT_EQ(again.injected().size(), first.injected().size());
  EXPECT_FALSE(again.rule("mem-cap").is_null()) << "the cap comes back, so cudaMemGetInfo answers as before";
  // A trace without injected calls cannot be replayed.
  Traced plain = probe("replay_c", {}, {"malloc:1"});
  RunResult r = record(fresh_dir("replay_d"), {program("fault_probe"), "malloc:1"}, shim_env(),
                       {"--replay-faults", plain.dir});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no injected call"), std::string::npos) << r.err;
}

TEST(Faults, MalformedPlansStopRecordAndAreIgnoredUnderPlainPreload) {
  std::string dir = fresh_dir("bad");
  std::string marker = dir + "/ran";
  RunResult r = record(dir + "/run", {"sh", "-c", "touch " + marker}, shim_env(), {"--fault", "alloc:OOM,nth=zero"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("'nth=zero'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not started"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker)) << "the command must not run under a half-understood plan";
  r = record(dir + "/run", {"true"}, shim_env(), {"--mem-cap", "lots"});
  EXPECT_EQ(r.status, 2);
  std::ofstream(dir + "/plan.json") << R"({"rules": [{"calls": "alloc", "error": "OOM", "nht": 2}]})";
  r = record(dir + "/run", {"true"}, shim_env(), {"--faults", dir + "/plan.json"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("'nht=2'"), std::string::npos) << r.err;
  // Under plain LD_PRELOAD the shim says why and injects nothing.
  std::string out = dir + "/preload";
  RunResult p = run({program("fault_probe"), "malloc:1"},
                    shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", out}, {"CUPROBE_FAULTS", "alloc:OOM,nth=x"}}));
  EXPECT_EQ(p.out, "malloc 1 0 set\n");
  EXPECT_NE(p.err.find("nothing will be injected"), std::string::npos) << p.err;
  auto lines = dump(out);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["stats"]["fault_plan_rejected"], 1);
}

// Regexes that would stall the traced job (back-references, a backtracking blow-up) or cost it
// hundreds of megabytes (nested repetition counts) are refused at once, by record and by the shim;
// JSON values cannot smuggle triggers into a rule.
TEST(Faults, UnsafeRegexesAndSmuggledValuesAreRefused) {
  std::string dir = fresh_dir("unsafe");
  std::string marker = dir + "/ran";
  const std::string backrefs = "cudnn-execute:NOT_SUPPORTED,problem~^(.*)(.*)(.*)(.*)(.*)(.*)\\6\\5\\4\\3\\2\\1$";
  RunResult r = record(dir + "/run", {"sh", "-c", "touch " + marker}, shim_env(), {"--fault", backrefs});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("back-references (\\6) are not supported"), std::string::npos) << r.err;
  r = record(dir + "/run", {"sh", "-c", "touch " + marker}, shim_env(),
             {"--fault", "cudnn-execute:NOT_SUPPORTED,problem~(a{1000}){1000}"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("more than 4096 states"), std::string::npos) << r.err;
  std::ofstream(dir + "/plan.json") << R"({"rules": [{"calls": "alloc", "error": "OOM,nth=1"}]})";
  r = record(dir + "/run", {"sh", "-c", "touch " + marker}, shim_env(), {"--faults", dir + "/plan.json"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("\"OOM,nth=1\" is not an error name"), std::string::npos) << r.err;
  r = record(dir + "/run", {"sh", "-c", "touch " + marker}, shim_env(), {"--fault", "alloc:OOM,from=20000000000s"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("too large"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker));
  // Under plain LD_PRELOAD the shim refuses the plan before the program's first call.
  std::string out = dir + "/preload";
  RunResult p = run({program("fault_probe"), "malloc:1"},
                    shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", out}, {"CUPROBE_FAULTS", backrefs}}));
  EXPECT_EQ(p.out, "malloc 1 0 set\n");
  EXPECT_NE(p.err.find("back-references"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("nothing will be injected"), std::string::npos) << p.err;
}

TEST(Faults, JsonPlanFileWorksLikeSpecs) {
  std::string dir = fresh_dir("jsonplan");
  std::ofstream(dir + "/plan.json") << R"({"rules": [{"calls": "alloc", "error": "OOM", "at": [2, 3], "name": "two"}],
                                            "mem_cap": "1MiB"})";
  Traced run = probe("jsonplan_run", {"--faults", dir + "/plan.json"}, {"malloc:1", "malloc:1", "malloc:1", "malloc:2097152"});
  EXPECT_EQ(codes(run, "cudaMalloc"), "0 2 2 2");
  EXPECT_EQ(run.rule("two")["injected"], 2);
  EXPECT_EQ(run.rule("mem-cap")["injected"], 1);
}

// cuDNN: the backend path of a benchmark search, as PyTorch drives it.
TEST(Faults, CudnnRulesFollowProblemsEnginesAndPlans) {
  std::vector<std::string> search = {program("frontend_search"), "--benchmark", "--shapes", "2", "--steps", "2"};
  // NOT_SUPPORTED on the first two executions of one problem: the search moves on and picks another.
  Traced first = record_with("cudnn_first", {"--fault", "cudnn-execute:NOT_SUPPORTED,problem=x[16,first=2"}, search);
  ASSERT_EQ(first.r.status, 0) << first.r.err;
  auto inj = first.injected();
  ASSERT_EQ(inj.size(), 2u);
  for (const auto& c : inj) {
    EXPECT_EQ(c["ret"], 3000);
    EXPECT_NE(c["problem"].get<std::string>().find("x[16,"), std::string::npos);
  }
  // By regex and by hash, the same problem: the hash is on the problem's own line of the dump.
  std::string hash;
  for (const auto& p : of_type(first.lines, "problem")) {
    if (p["text"] == inj[0]["problem"]) hash = p["hash"];
  }
  ASSERT_FALSE(hash.empty()) << inj[0].dump();
  Traced by_hash = record_with("cudnn_hash", {"--fault", "cudnn-execute:EXECUTION_FAILED,problem=" + hash}, search);
  ASSERT_FALSE(by_hash.injected().empty());
  for (const auto& c : by_hash.injected()) EXPECT_EQ(c["problem"], inj[0]["problem"]);
  EXPECT_EQ(by_hash.r.status, 1) << "every execution of the problem failed: the search found no plan";
  EXPECT_NE(by_hash.r.err.find("no plan executed"), std::string::npos) << by_hash.r.err;
  Traced by_re = record_with("cudnn_re", {"--fault", "cudnn-execute:NOT_SUPPORTED,problem~^conv_fwd x\\[8,,max=1"}, search);
  ASSERT_EQ(by_re.injected().size(), 1u);
  EXPECT_NE(by_re.injected()[0]["problem"].get<std::string>().find("x[8,"), std::string::npos);
  // The dialect's extras and an escaped comma reach the shim's matcher.
  Traced by_re2 = record_with("cudnn_re2", {"--fault", "cudnn-execute:NOT_SUPPORTED,problem~^(conv_fwd|x) x\\[\\d\\,,max=1"},
                              search);
  ASSERT_EQ(by_re2.injected().size(), 1u) << by_re2.r.err;
  EXPECT_NE(by_re2.injected()[0]["problem"].get<std::string>().find("x[8,"), std::string::npos);
  // Plans on one engine fail to finalize: never executed, the job goes on without them.
  Traced engine = record_with("cudnn_engine", {"--fault", "cudnn-finalize:NOT_SUPPORTED_SHAPE,engine=0"}, search);
  ASSERT_EQ(engine.r.status, 0) << engine.r.err;
  ASSERT_FALSE(engine.injected().empty());
  for (const auto& c : engine.injected()) {
    EXPECT_EQ(c["api"], "cudnnBackendFinalize");
    EXPECT_EQ(c["engine"], 0);
    EXPECT_EQ(c["ret"], 3002);
  }
  for (const auto& c : engine.calls("cudnnBackendExecute")) EXPECT_NE(c["engine"], 0);
  // OOM for a cuDNN call is cuDNN's allocation-failure status.
  Traced oom = record_with("cudnn_oom", {"--fault", "cudnn-execute:OOM,nth=1"}, search);
  ASSERT_EQ(oom.injected().size(), 1u);
  EXPECT_EQ(oom.injected()[0]["ret"], 4004);
}

TEST(Faults, LegacyCallsCanFail) {
  std::vector<std::string> prog = {program("legacy_conv")};
  struct Case {
    std::string rule, api;
    int code;
  } cases[] = {{"cudnn-legacy-exec:EXECUTION_FAILED,nth=1", "cudnnConvolutionForward", 5000},
               {"cudnn-find:NOT_SUPPORTED,nth=2", "cudnnFindConvolutionBackwardDataAlgorithmEx", 3000},
               {"cudnnGetConvolutionBackwardFilterAlgorithm_v7:BAD_PARAM", "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                2000}};
  for (const auto& c : cases) {
    Traced run = record_with("legacy", {"--fault", c.rule}, prog);
    EXPECT_EQ(run.r.status, 1) << c.rule << ": the program stops at the failure";
    auto inj = run.injected();
    ASSERT_EQ(inj.size(), 1u) << c.rule << run.r.err;
    EXPECT_EQ(inj[0]["api"], c.api);
    EXPECT_EQ(inj[0]["ret"], c.code);
    EXPECT_NE(run.r.err.find(std::to_string(c.code)), std::string::npos) << run.r.err;
    EXPECT_FALSE(inj[0]["problem"].get<std::string>().empty()) << "legacy faults know their problem";
  }
}

json analyze_json(const std::string& path) {
  RunResult r = run({cuprobe_bin(), "analyze", "--json", path});
  EXPECT_TRUE(r.status == 0 || r.status == 1) << r.err;
  return json::parse(r.out);
}

TEST(Faults, AnalyzeSummarizesWhatTheApplicationDidNext) {
  std::vector<std::string> search = {program("frontend_search"), "--benchmark", "--shapes", "1", "--steps", "2"};
  Traced cudnn = record_with("an_cudnn", {"--fault", "cudnn-execute:NOT_SUPPORTED,first=2"}, search);
  json rep = analyze_json(cudnn.dir);
  ASSERT_EQ(rep["summary"]["faults"].size(), 1u) << rep.dump();
  json f = rep["summary"]["faults"][0];
  EXPECT_EQ(f["rule"], "rule1");
  EXPECT_EQ(f["injected"], 2);
  EXPECT_EQ(f["outcomes"]["moved to another plan"], 2) << f.dump();
  for (const auto& finding : rep["findings"]) {
    EXPECT_NE(finding["rule"], "unsupported-config") << "injected failures are not cuDNN's: " << finding.dump();
  }

  Traced alloc = probe("an_alloc", {"--fault", "alloc:OOM,nth=1", "--fault", "alloc:OOM,nth=3,name=late"},
                    {"malloc:100", "malloc:100", "malloc:64", "malloc:64", "free", "malloc:64"});
  json a = analyze_json(alloc.dir)["summary"]["faults"];
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0]["outcomes"]["retried the same call"], 1) << a.dump();
  EXPECT_EQ(a[1]["outcomes"]["freed memory and retried"], 1) << a.dump();

  json alloc_report = analyze_json(alloc.dir);
  for (const auto& finding : alloc_report["findings"]) {
    EXPECT_NE(finding["rule"], "oom-postmortem") << "a fault rule's OOM is the fault summary's: " << finding.dump();
  }
  // Every execution of a problem fails on purpose: the failed search is not reported as cuDNN's.
  Traced hopeless = record_with("an_hopeless", {"--fault", "cudnn-execute:EXECUTION_FAILED,problem=x[8\\,"}, search);
  EXPECT_EQ(hopeless.r.status, 1);
  json h = analyze_json(hopeless.dir);
  EXPECT_EQ(h["summary"]["faults"][0]["outcomes"]["stopped"], 1) << h.dump();
  for (const auto& finding : h["findings"]) EXPECT_NE(finding["rule"], "unsupported-config") << finding.dump();

  Traced smaller = probe("an_smaller", {"--fault", "alloc:OOM,size>=1000"}, {"malloc:4000", "malloc:2000", "malloc:10"});
  json sm = analyze_json(smaller.dir)["summary"]["faults"];
  EXPECT_EQ(sm[0]["outcomes"]["retried with a smaller size"], 1) << sm.dump();  // 4000 -> 2000, as cuDNN halving
  EXPECT_EQ(sm[0]["outcomes"]["went on to other work"], 1) << sm.dump();        // 2000 -> 10: gave up on it

  Traced stop = probe("an_stop", {"--fault", "sync:EXECUTION_FAILED"}, {"sync", "malloc:1"});
  json s = analyze_json(stop.dir)["summary"]["faults"];
  EXPECT_EQ(s[0]["outcomes"]["stopped"], 1) << s.dump();

  // The memory cap's failure is explained by the OOM post-mortem against the cap.
  Traced cap = probe("an_cap", {"--mem-cap", "10000"}, {"malloc:6000", "malloc:6000"});
  json c = analyze_json(cap.dir);
  bool explained = false;
  for (const auto& finding : c["findings"]) {
    if (finding["rule"] != "oom-postmortem") continue;
    explained = true;
    EXPECT_EQ(finding["evidence"]["injected_by"], "mem-cap");
    EXPECT_EQ(finding["evidence"]["device_memory"], 10000);
    EXPECT_NE(finding["message"].get<std::string>().find("memory cap of 9.8 KiB"), std::string::npos)
        << finding["message"];
  }
  EXPECT_TRUE(explained) << c.dump();

  // The same summary from the JSON Lines of `cuprobe dump`.
  std::string jsonl = cudnn.dir + ".jsonl";
  RunResult d = run({cuprobe_bin(), "dump", cudnn.dir});
  std::ofstream(jsonl) << d.out;
  EXPECT_EQ(analyze_json(jsonl)["summary"]["faults"], rep["summary"]["faults"]);
}

}  // namespace
}  // namespace cuprobe::test
