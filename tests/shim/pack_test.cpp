// `cuprobe pack` (issue 30): traces at rest compressed with zstd; every command reads the packed
// run as it read the original (analyze, dump, plans export), a live trace is left alone, and a
// packed file that was cut off is named, not read short.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Dump lines without what names the file (the same process, read from another file).
std::vector<json> calls_of(const std::string& path) {
  std::vector<json> out;
  for (auto& l : dump(path)) {
    if (l["type"] == "process") l.erase("file");
    out.push_back(l);
  }
  return out;
}

TEST(Pack, APackedRunReadsAsTheOriginal) {
  std::string dir = fresh_dir("pack-run") + "/run";
  // Two processes: allocations, and cuDNN benchmark searches repeated (a re-search storm).
  ASSERT_EQ(record(dir, {program("fault_probe"), "malloc:100"}, shim_env(), {"-q"}).status, 0);
  RunResult second = record(dir, {program("frontend_search"), "--benchmark", "--shapes", "8", "--repeat", "3"},
                            shim_env(), {"-q", "--append"});
  ASSERT_EQ(second.status, 0) << second.err;
  std::string plain = fresh_dir("pack-plain") + "/run";
  fs::copy(dir, plain);
  json before = analyze_json({plain});
  auto dumped = calls_of(plain);
  ASSERT_GT(dumped.size(), 10u);

  RunResult p = run({cuprobe_bin(), "pack", dir});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_NE(p.err.find("2 traces packed"), std::string::npos) << p.err;
  for (const auto& f : files_in(dir)) EXPECT_TRUE(f.size() > 12 && f.substr(f.size() - 12) == ".cuprobe.zst") << f;
  EXPECT_EQ(files_in(dir).size(), 2u);

  json after = analyze_json({dir});
  EXPECT_EQ(after["findings"], before["findings"]);
  EXPECT_EQ(after["summary"]["processes"], before["summary"]["processes"]);
  EXPECT_EQ(calls_of(dir), dumped);
  // One packed file by name, and plans export, read it too.
  std::string one = dir + "/" + files_in(dir)[0];
  EXPECT_FALSE(dump(one).empty());
  std::string plans = fresh_dir("pack-plans") + "/plans.json";
  RunResult e = run({cuprobe_bin(), "plans", "export", "-q", "-o", plans, dir});
  EXPECT_EQ(e.status, 0) << e.err;

  // Packing again finds nothing left to pack.
  RunResult again = run({cuprobe_bin(), "pack", dir});
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("0 traces packed"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("2 already packed"), std::string::npos) << again.err;

  // --keep: both files stay, readers take the original once (not the same process twice).
  std::string kept = fresh_dir("pack-keep") + "/run";
  fs::copy(plain, kept);
  ASSERT_EQ(run({cuprobe_bin(), "pack", "-q", "--keep", "--level", "19", kept}).status, 0);
  EXPECT_EQ(files_in(kept).size(), 4u);
  EXPECT_EQ(analyze_json({kept})["summary"]["processes"], before["summary"]["processes"]);

  // JSON Lines (dump output) packed read as well.
  std::string jdir = fresh_dir("pack-jsonl");
  RunResult d = run({cuprobe_bin(), "dump", plain});
  std::ofstream(jdir + "/job.jsonl") << d.out;
  ASSERT_EQ(run({cuprobe_bin(), "pack", "-q", jdir + "/job.jsonl"}).status, 0);
  EXPECT_TRUE(fs::exists(jdir + "/job.jsonl.zst"));
  EXPECT_EQ(analyze_json({jdir + "/job.jsonl.zst"})["findings"], before["findings"]);
}

TEST(Pack, LeavesALiveTraceAndNamesACutOne) {
  std::string dir = fresh_dir("pack-live") + "/run";
  Child c = spawn({program("killable"), "200"}, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir}}));
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(c.read_line(60000), "ready 200");
  RunResult live = run({cuprobe_bin(), "pack", dir});
  EXPECT_EQ(live.status, 2);
  EXPECT_NE(live.err.find("still being recorded by process " + std::to_string(c.pid)), std::string::npos) << live.err;
  ASSERT_EQ(files_in(dir).size(), 1u);
  EXPECT_EQ(fs::path(files_in(dir)[0]).extension(), ".cuprobe");
  kill(c.pid, SIGKILL);
  c.wait();
  // Killed: nobody writes it any more; it packs, and reads as a process that died.
  RunResult dead = run({cuprobe_bin(), "pack", "-q", dir});
  EXPECT_EQ(dead.status, 0) << dead.err;
  std::string packed = dir + "/" + files_in(dir)[0];
  EXPECT_EQ(of_type(dump(packed), "process").size(), 1u);

  // Cut in half: an error that names the file, exit 2, never a short read.
  fs::resize_file(packed, fs::file_size(packed) / 2);
  RunResult cut = run({cuprobe_bin(), "analyze", packed});
  EXPECT_EQ(cut.status, 2);
  EXPECT_NE(cut.err.find(packed), std::string::npos) << cut.err;
  EXPECT_NE(cut.err.find("the zstd data ends early"), std::string::npos) << cut.err;

  RunResult bad = run({cuprobe_bin(), "pack", "--level", "25", dir});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("zstd levels are 1 to 19"), std::string::npos) << bad.err;
  RunResult none = run({cuprobe_bin(), "pack"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no run directory or trace given"), std::string::npos) << none.err;
}

TEST(Pack, ADirectoryOthersCanWriteIsNamedOnce) {
  std::string dir = fresh_dir("pack-shared") + "/run";
  ASSERT_EQ(record(dir, {program("fault_probe"), "malloc:10"}, shim_env(), {"-q"}).status, 0);
  ASSERT_EQ(record(dir, {program("fault_probe"), "malloc:10"}, shim_env(), {"-q", "--append"}).status, 0);
  fs::permissions(dir, fs::perms::group_write, fs::perm_options::add);
  RunResult p = run({cuprobe_bin(), "pack", dir});
  EXPECT_EQ(p.status, 2);
  EXPECT_NE(p.err.find("cuprobe does not write there"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("the directory's other traces are left as they are"), std::string::npos) << p.err;
  EXPECT_EQ(p.err.find("cuprobe does not write there"), p.err.rfind("cuprobe does not write there")) << p.err;
  EXPECT_NE(p.err.find("2 traces not packed (above)"), std::string::npos) << p.err;
  for (const auto& f : files_in(dir)) EXPECT_EQ(fs::path(f).extension(), ".cuprobe") << f;
}

}  // namespace
}  // namespace cuprobe::test
