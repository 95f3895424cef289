// Live alerts (issue 15, shim/alerts.h) against the test doubles: an out-of-memory failure as
// PyTorch reports it and as the driver refuses the allocation, a fault mode injection, a storm of
// new cuDNN problems (and none for a job whose problems all came at its start), rate limiting,
// CUPROBE_ALERTS=off and file:PATH, and `cuprobe record --alerts`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> alert_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cuprobe alert: ", 0) == 0) out.push_back(line);
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// Every execution of a plan takes 300 us in the cuDNN double: a search of ten candidates and a
// few steps take milliseconds, so that problems arrive over a measurable time.
Env slow_engines(Env extra = {}) {
  std::string us;
  for (int e = 0; e < 12; ++e) us += (e ? "," : "") + std::to_string(e) + ":300";
  extra.emplace_back("FAKECUDNN_ENGINE_US", us);
  return shim_env(extra);
}

TEST(Alerts, OutOfMemoryIsToldAsItHappens) {
  std::string dir = fresh_dir("alerts-oom");
  const uint64_t request = (8ull << 30) + (1ull << 20);
  RunResult r = record(dir, {program("expandable_oom"), std::to_string(request)},
                       shim_env({{"FAKECUDA_MEM", std::to_string(1ull << 30)}}), {"-q"});
  ASSERT_EQ(r.status, 1) << r.out << r.err;
  auto lines = alert_lines(r.err);
  std::string all = joined(lines);
  // The driver's refusal first (PyTorch may still recover), then PyTorch's own report: one line
  // each; the second refusal, within ten seconds of the first, is held.
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_NE(lines[0].find("cuMemCreate of 20.0 MiB failed on device 0 (out of memory)"), std::string::npos) << all;
  EXPECT_NE(lines[1].find("out of memory on cuda:0: PyTorch could not allocate 8.00 GiB (170.0 MiB allocated by "
                          "tensors, 180.0 MiB reserved"),
            std::string::npos)
      << all;
  for (const auto& l : lines) {
    EXPECT_NE(l.find(": pid "), std::string::npos) << l;
    EXPECT_NE(l.find("Trace: " + fs::absolute(dir).string()), std::string::npos) << l;
  }
}

TEST(Alerts, InjectedFaultsAreToldOncePerQuietTimeNotAsGenuineFailures) {
  std::string dir = fresh_dir("alerts-fault");
  std::vector<std::string> argv = {program("fault_probe")};
  for (int k = 0; k < 8; ++k) argv.push_back("malloc:100");
  RunResult r = record(dir, argv, shim_env({{"RANK", "3"}}), {"-q", "--fault", "alloc:OOM,every=2,name=every-other"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = alert_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("cuprobe alert: rank 3 (pid "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("fault mode: rule 'every-other' made cudaMalloc fail with 2 (cudaErrorMemoryAllocation) "
                          "(match 2 of the rule)"),
            std::string::npos)
      << lines[0];
  EXPECT_EQ(lines[0].find("failed on device"), std::string::npos) << "an injected failure is not a genuine one";
}

TEST(Alerts, OffSilencesThemAndAFileTakesThem) {
  std::vector<std::string> argv = {program("fault_probe"), "malloc:100", "malloc:100"};
  RunResult off = record(fresh_dir("alerts-off"), argv, shim_env({{"CUPROBE_ALERTS", "off"}}),
                         {"-q", "--fault", "alloc:OOM,nth=1"});
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_TRUE(alert_lines(off.err).empty()) << off.err;
  RunResult off2 = record(fresh_dir("alerts-off2"), argv, shim_env(), {"-q", "--alerts", "off", "--fault", "alloc:OOM,nth=1"});
  ASSERT_EQ(off2.status, 0) << off2.err;
  EXPECT_TRUE(alert_lines(off2.err).empty()) << off2.err;

  std::string file = fresh_dir("alerts-file") + "/alerts.txt";
  RunResult to_file = record(fresh_dir("alerts-file-run"), argv, shim_env(), {"-q", "--alerts", file, "--fault", "alloc:OOM,nth=1"});
  ASSERT_EQ(to_file.status, 0) << to_file.err;
  EXPECT_TRUE(alert_lines(to_file.err).empty()) << to_file.err;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  auto lines = alert_lines(text.str());
  ASSERT_EQ(lines.size(), 1u) << text.str();
  EXPECT_NE(lines[0].find("made cudaMalloc fail"), std::string::npos) << lines[0];

  RunResult bad = record(fresh_dir("alerts-bad"), argv, shim_env({{"CUPROBE_ALERTS", "loud"}}), {"-q"});
  EXPECT_EQ(bad.status, 2) << "record refuses a value the shim would not take";
  EXPECT_NE(bad.err.find("CUPROBE_ALERTS"), std::string::npos) << bad.err;
}

TEST(Alerts, NewProblemsThatKeepArrivingAreAStorm) {
  // 40 shapes one after another, each searched (forward and both backward convolutions): 120
  // problems over the whole run. With the storm rule from 1 s on, one alert (rate-limited).
  std::string dir = fresh_dir("alerts-storm");
  RunResult r = record(dir,
                       {build_path("examples/simulated_storm"), "--benchmark", "--bwd", "--shapes", "40", "--steps", "20"},
                       slow_engines({{"CUPROBE_ALERTS_STORM_S", "1"}}), {"-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = alert_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("new cuDNN problems keep arriving: "), std::string::npos) << lines[0];
  EXPECT_NE(
      lines[0].find("since the first (input shapes, or a batch dimension such as a count of proposals, still changing"),
      std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("cuprobe record --search-budget 5% keeps searches within 5% of the job's time)"),
            std::string::npos)
      << lines[0];
  // Under a budget the alert says the budget is at work instead.
  RunResult cured =
      record(fresh_dir("alerts-storm-budget"),
             {build_path("examples/simulated_storm"), "--benchmark", "--bwd", "--shapes", "40", "--steps", "20"},
             slow_engines({{"CUPROBE_ALERTS_STORM_S", "1"}}), {"-q", "--search-budget", "5"});
  ASSERT_EQ(cured.status, 0) << cured.err;
  auto cured_lines = alert_lines(cured.err);
  ASSERT_FALSE(cured_lines.empty()) << cured.err;
  EXPECT_NE(cured_lines[0].find("the search budget in force gives new problems past it cuDNN's heuristic plan)"),
            std::string::npos)
      << cured_lines[0];

  // Eight shapes searched once, then run again and again (as buckets do): every problem comes in
  // the first pass, none later; no alert, however long the job runs.
  RunResult quiet = record(fresh_dir("alerts-buckets"),
                           {build_path("examples/simulated_storm"), "--benchmark", "--bwd", "--shapes", "8", "--repeat",
                            "12", "--steps", "10"},
                           slow_engines({{"CUPROBE_ALERTS_STORM_S", "1"}, {"CUPROBE_ALERTS_STORM_NEW", "5"}}), {"-q"});
  ASSERT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_TRUE(alert_lines(quiet.err).empty()) << quiet.err;
}

}  // namespace
}  // namespace cuprobe::test
