// How reports name and order processes (issue 13): the rank from the launcher's variables, else
// from the NCCL communicator the process set up (trace property nccl_rank), else a label of host,
// pid and the device most calls ran on; ranked processes first by rank, the others by host,
// device and pid, whatever order their files were read in. A launcher (a process without a rank
// that made no CUDA work: torchrun's agent) is counted on one line of the text report rather than
// listed, and stays in the JSON summary, marked.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "analysis/common.h"
#include "analysis/engine.h"
#include "analysis/facts.h"
#include "trace/reader.h"

namespace cuprobe::analysis {
namespace {

namespace fs = std::filesystem;

// One process of `host` with `keys` added to its line, making two calls on `device`.
std::string process_text(uint32_t pid, const std::string& host, int device, const std::string& keys = "") {
  std::string text = fmt::format(R"({{"type": "process", "pid": {}, "host": "{}", "start_ns": 1000, )"
                                 R"("state": "exited", "end_ns": 90000000{}{}}})"
                                 "\n",
                                 pid, host, keys.empty() ? "" : ", ", keys);
  for (int k = 0; k < 2; ++k) {
    text += fmt::format(R"({{"type": "call", "api": "cudaDeviceSynchronize", "ret": 0, "ts_ns": {}, "dur_ns": 10, )"
                        R"("pid": {}, "tid": 1, "device": {}}})"
                        "\n",
                        2000 + k, pid, device);
  }
  return text;
}

// A process that only asked how many devices there are (an import's query, no work), started as
// `cmdline` and ended as `state`.
std::string idle_text(uint32_t pid, const std::string& host, const std::string& cmdline,
                      const std::string& state = "exited") {
  std::string text = fmt::format(R"({{"type": "process", "pid": {}, "host": "{}", "start_ns": 1000, )"
                                 R"("state": "{}", "end_ns": 90000000, "cmdline": {}}})"
                                 "\n",
                                 pid, host, state, cmdline);
  for (int k = 0; k < 3; ++k) {
    text += fmt::format(R"({{"type": "call", "api": "cudaGetDeviceCount", "ret": 0, "ts_ns": {}, "dur_ns": 10, )"
                        R"("pid": {}, "tid": 1}})"
                        "\n",
                        1500 + k, pid);
  }
  return text;
}

ProcessFacts facts_of(const std::string& text, std::unique_ptr<reader::Trace>* keep) {
  auto r = reader::read_jsonl_text(text, "labels.jsonl");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok() || r->size() != 1) return {};
  *keep = std::move(r->front());
  return gather_facts(**keep, FactOptions{});
}

TEST(ProcessLabel, RankFromTheLauncherWinsOverNccl) {
  std::unique_ptr<reader::Trace> t;
  ProcessFacts p = facts_of(process_text(11, "gpu0", 1, R"("rank": 2, "nccl_rank": 5, "nccl_world_size": 8)"), &t);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.rank_source, "env");
  EXPECT_EQ(process_label(p), "rank 2 (pid 11 on host gpu0)");
}

TEST(ProcessLabel, RankFromNcclWhenTheLauncherSetNone) {
  std::unique_ptr<reader::Trace> t;
  ProcessFacts p = facts_of(process_text(12, "gpu0", 1, R"("nccl_rank": 5, "nccl_world_size": 8)"), &t);
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.rank_source, "nccl");
  EXPECT_EQ(process_label(p), "rank 5 (pid 12 on host gpu0)");
}

TEST(ProcessLabel, UnknownRankIsNamedByHostPidAndDevice) {
  std::unique_ptr<reader::Trace> t;
  ProcessFacts p = facts_of(process_text(1234, "gpu0", 3), &t);
  EXPECT_EQ(p.rank, -1);
  EXPECT_EQ(p.rank_source, "");
  EXPECT_EQ(p.device, 3);
  EXPECT_EQ(process_label(p), "pid 1234 on host gpu0 (cuda:3)");
  ProcessFacts bare;
  bare.pid = 7;
  EXPECT_EQ(process_label(bare), "pid 7");  // no host, no device: nothing made up
}

TEST(ProcessLabel, OrderIsRanksThenHostDevicePid) {
  auto make = [](uint32_t pid, const std::string& host, int device, int rank) {
    ProcessFacts p;
    p.pid = pid;
    p.host = host;
    p.device = device;
    p.rank = rank;
    return p;
  };
  std::vector<ProcessFacts> ps = {make(5, "b", 0, -1), make(9, "a", 1, -1), make(3, "a", 1, -1),
                                  make(1, "a", 0, -1), make(8, "z", 0, 1),  make(2, "a", 0, 0)};
  std::stable_sort(ps.begin(), ps.end(), process_before);
  std::vector<uint32_t> pids;
  for (const auto& p : ps) pids.push_back(p.pid);
  EXPECT_EQ(pids, (std::vector<uint32_t>{2, 8, 1, 3, 9, 5}));
}

// A run directory whose files list the processes in another order: the report's is stable.
TEST(ProcessLabel, ReportListsUnrankedProcessesByHostDevicePid) {
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("labels-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"a.jsonl", process_text(300, "gpu1", 0)},
      {"b.jsonl", process_text(100, "gpu0", 1)},
      {"c.jsonl", process_text(200, "gpu0", 0)},
      {"d.jsonl", process_text(50, "gpu0", 1)},
      {"e.jsonl", process_text(999, "gpu9", 0, R"("nccl_rank": 0, "nccl_world_size": 1)")}};
  for (const auto& [name, text] : files) std::ofstream(dir / name) << text;
  AnalyzeOptions o;
  o.paths = {dir.string()};
  o.rule_dirs = {CUPROBE_TEST_RULES_DIR};
  o.threads = 2;
  auto r = analyze(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<std::string> labels;
  for (const auto& p : r->summary["per_process"]) labels.push_back(p["label"]);
  EXPECT_EQ(labels, (std::vector<std::string>{"rank 0 (pid 999 on host gpu9)", "pid 200 on host gpu0 (cuda:0)",
                                              "pid 50 on host gpu0 (cuda:1)", "pid 100 on host gpu0 (cuda:1)",
                                              "pid 300 on host gpu1 (cuda:0)"}));
  EXPECT_EQ(r->summary["ranks"], nlohmann::json::array({0}));
  EXPECT_EQ(r->summary["rank_sources"], nlohmann::json::array({"nccl"}));
  EXPECT_EQ(r->summary["unranked_processes"], 4);
  char* buf = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&buf, &len);
  print_report(*r, false, out);
  std::fclose(out);
  std::string text(buf, len);
  std::free(buf);
  EXPECT_NE(text.find("ranks: 0 (from NCCL communicators)"), std::string::npos) << text;
  EXPECT_NE(text.find("4 processes without a rank"), std::string::npos) << text;
  EXPECT_LT(text.find("pid 200 on host gpu0 (cuda:0):"), text.find("pid 300 on host gpu1 (cuda:0):")) << text;
  fs::remove_all(dir);
}

// The job's files in a fresh directory, analyzed: the report's JSON summary and its text.
struct Analyzed {
  nlohmann::json summary;
  std::string text;
};

Analyzed analyze_files(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [file, text] : files) std::ofstream(dir / file) << text;
  AnalyzeOptions o;
  o.paths = {dir.string()};
  o.rule_dirs = {CUPROBE_TEST_RULES_DIR};
  o.threads = 2;
  auto r = analyze(o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  char* buf = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&buf, &len);
  print_report(*r, false, out);
  std::fclose(out);
  Analyzed a{r->summary, std::string(buf, len)};
  std::free(buf);
  fs::remove_all(dir);
  return a;
}

// torchrun's agent and two workers with RANK: the agent is one line, not a process of the list.
TEST(ProcessLabel, LauncherWithoutCudaWorkIsCountedNotListed) {
  Analyzed a = analyze_files(
      "launcher",
      {{"agent.jsonl",
        idle_text(100, "gpu0", R"(["/usr/bin/python3", "/venv/bin/torchrun", "--nproc-per-node=2", "train.py"])")},
       {"w0.jsonl", process_text(101, "gpu0", 0, R"("rank": 0)")},
       {"w1.jsonl", process_text(102, "gpu0", 1, R"("rank": 1)")}});
  // The JSON summary keeps every process, the agent marked.
  EXPECT_EQ(a.summary["processes"], 3);
  EXPECT_EQ(a.summary["launcher_processes"], 1);
  EXPECT_EQ(a.summary["unranked_processes"], 1);
  ASSERT_EQ(a.summary["per_process"].size(), 3u);
  for (const auto& p : a.summary["per_process"]) {
    EXPECT_EQ(p["launcher"], p["pid"] == 100) << p.dump();
    if (p["pid"] == 100) EXPECT_EQ(p["program"], "torchrun");
  }
  EXPECT_NE(a.text.find("  1 process without CUDA work (a launcher or helper: torchrun, pid 100) not listed\n"), std::string::npos)
      << a.text;
  EXPECT_EQ(a.text.find("pid 100 on host"), std::string::npos) << a.text;
  EXPECT_EQ(a.text.find("without a rank"), std::string::npos) << "the agent is no worker without a rank\n" << a.text;
  EXPECT_NE(a.text.find("rank 0 (pid 101 on host gpu0):"), std::string::npos) << a.text;
}

// Workers without a rank are still counted as such; launchers are not among them. A process that
// did no work but died (a worker that failed early) is listed; so is every process of a job in
// which none did any work.
TEST(ProcessLabel, OnlyCleanIdleProcessesOfAWorkingJobAreLaunchers) {
  Analyzed a = analyze_files(
      "launchers",
      {{"agent.jsonl", idle_text(100, "gpu0", R"(["python3", "-u", "-m", "torch.distributed.run", "train.py"])")},
       {"spawner.jsonl", idle_text(99, "gpu0", R"(["/usr/bin/python3.12", "-X", "dev", "launch.py"])")},
       {"early.jsonl", idle_text(103, "gpu0", R"(["python3", "train.py"])", "signaled")},
       {"w0.jsonl", process_text(101, "gpu0", 0)},
       {"w1.jsonl", process_text(102, "gpu0", 1)}});
  EXPECT_EQ(a.summary["launcher_processes"], 2);
  EXPECT_EQ(a.summary["unranked_processes"], 5);
  EXPECT_NE(a.text.find("  2 processes without CUDA work (a launcher or helper: launch.py, pid 99; torch.distributed.run, pid 100) "
                        "not listed\n"),
            std::string::npos)
      << a.text;
  EXPECT_NE(a.text.find("  3 processes without a rank"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("pid 103 on host gpu0:"), std::string::npos) << "died before its work: listed\n" << a.text;

  Analyzed idle = analyze_files("idle", {{"a.jsonl", idle_text(7, "gpu0", R"(["python3", "probe.py"])")},
                                         {"b.jsonl", idle_text(8, "gpu0", R"(["python3", "probe.py"])")}});
  EXPECT_EQ(idle.summary["launcher_processes"], 0);
  EXPECT_NE(idle.text.find("pid 7 on host gpu0:"), std::string::npos) << idle.text;
  EXPECT_EQ(idle.text.find("without CUDA work"), std::string::npos) << idle.text;
}

}  // namespace
}  // namespace cuprobe::analysis
