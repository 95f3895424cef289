// Summaries of many ranks (issue 30): from 16 processes on, analyze's text groups the processes
// that look alike and names each outlier with what differs; --per-rank lists them all; JSON keeps
// every process and adds summary.rank_groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

using nlohmann::json;

const std::string kFixtures = std::string(CUPROBE_TEST_RULES_DIR) + "/fixtures";

// `n` ranks of one fixture process, renumbered; rank `odd` on another GPU model and rank `late`
// ending by a signal: two outliers of different kinds.
std::string job(int n, int odd, int late, const std::string& fixture = "/sync-stall/quiet/overlapped.jsonl") {
  std::ifstream in(kFixtures + fixture);
  std::vector<json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  std::string dir = fresh_dir("rank-groups");
  std::ofstream out(dir + "/job.jsonl");
  for (int r = 0; r < n; ++r) {
    for (json j : lines) {
      j["pid"] = 5000 + r;
      if (j["type"] == "call" && j.contains("tid")) j["tid"] = 5000 + r;
      if (j["type"] == "process") {
        j["rank"] = r;
        j["world_size"] = n;
        j["host"] = "node" + std::to_string(r / 8);
        if (r == odd) j["devices"][0]["name"] = "NVIDIA A100";
        if (r == late) {
          j["state"] = "signaled";
          j["signal"] = 9;
        }
      }
      out << j.dump() << "\n";
    }
  }
  return dir + "/job.jsonl";
}

size_t lines_of(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

TEST(RankGroups, ManyRanksAreSummarizedWithTheirOutliersNamed) {
  std::string path = job(40, 17, 33);
  RunResult a = run({cuprobe_bin(), "analyze", "--no-color", path});
  ASSERT_NE(a.status, 2) << a.err;
  EXPECT_NE(a.out.find("38 of 40 processes alike (ranks 0-16, 18-32, 34-39 on 5 hosts)"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("2 outliers (each against the processes alike):"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("rank 17 (pid 5017 on host node2): GPU NVIDIA A100 (cc 9.0) (others: NVIDIA H100 (cc 9.0))"),
            std::string::npos)
      << a.out;
  EXPECT_NE(a.out.find("rank 33 (pid 5033 on host node4): ended signal 9 (others: exited)"), std::string::npos)
      << a.out;
  EXPECT_NE(a.out.find("ranks: 0-39"), std::string::npos) << a.out;
  EXPECT_LT(lines_of(a.out), 30u) << a.out;

  RunResult all = run({cuprobe_bin(), "analyze", "--no-color", "--per-rank", path});
  EXPECT_GE(lines_of(all.out), lines_of(a.out) + 35) << all.out;
  EXPECT_NE(all.out.find("rank 5 (pid 5005 on host node0): "), std::string::npos) << all.out;

  json j = json::parse(run({cuprobe_bin(), "analyze", "--json", path}).out);
  EXPECT_EQ(j["summary"]["per_process"].size(), 40u);
  const json& rg = j["summary"]["rank_groups"];
  ASSERT_TRUE(rg.is_object()) << j["summary"].dump();
  EXPECT_EQ(rg["processes"], 40);
  EXPECT_EQ(rg["groups"][0]["count"], 38);
  EXPECT_EQ(rg["groups"][0]["ranks"], "0-16, 18-32, 34-39");
  ASSERT_EQ(rg["outliers"].size(), 2u);
  EXPECT_EQ(rg["outliers"][0]["rank"], 17);

  // Fewer than 16: every process on its own line, no groups.
  RunResult few = run({cuprobe_bin(), "analyze", "--no-color", job(12, 3, -1)});
  EXPECT_EQ(few.out.find("processes alike"), std::string::npos) << few.out;
  EXPECT_TRUE(
      json::parse(run({cuprobe_bin(), "analyze", "--json", job(12, 3, -1)}).out)["summary"]["rank_groups"].is_null());
}

TEST(RankGroups, ARuleFindingTheSameOnManyRanksIsFolded) {
  // Every one of 20 ranks frees and allocates in its steady state: 20 allocation-churn findings.
  std::string path = job(20, -1, -1, "/allocation-churn/fire/empty_cache_in_loop.jsonl");
  RunResult a = run({cuprobe_bin(), "analyze", "--no-color", path});
  EXPECT_NE(a.out.find("20 findings"), std::string::npos) << a.out;
  size_t shown = 0;
  for (size_t at = a.out.find("[warning] allocation-churn"); at != std::string::npos;
       at = a.out.find("[warning] allocation-churn", at + 1)) {
    ++shown;
  }
  EXPECT_EQ(shown, 3u) << a.out;
  EXPECT_NE(a.out.find("... 17 more allocation-churn findings like those above"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("--per-rank or --json shows each"), std::string::npos) << a.out;
  RunResult all = run({cuprobe_bin(), "analyze", "--no-color", "--per-rank", path});
  shown = 0;
  for (size_t at = all.out.find("[warning] allocation-churn"); at != std::string::npos;
       at = all.out.find("[warning] allocation-churn", at + 1)) {
    ++shown;
  }
  EXPECT_EQ(shown, 20u);
  EXPECT_EQ(json::parse(run({cuprobe_bin(), "analyze", "--json", path}).out)["findings"].size(), 20u);
}

}  // namespace
}  // namespace cuprobe::test
