// `cuprobe snapshot` (issue 15) of a job that keeps running: by run directory and by the traced
// process's pid; the copy holds every call up to then, is marked as a snapshot (running, not
// dead), stays the same while the job goes on, and analyzes without a finding about an unclean
// end. Bad operands are named.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cuprobe/trace_format.h"
#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> traces_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".cuprobe") out.push_back(e.path().string());
  }
  return out;
}

TEST(Snapshot, ARunningJobCopiedByDirectoryAndByPidAnalyzes) {
  std::string dir = fresh_dir("snapshot-run") + "/run";
  // The traced program itself, preloaded as trace_robustness_test.cpp does (a `cuprobe record`
  // launcher in between timed out under TSan in CI; the launcher's pid is validated on the GPU,
  // tests/gpu/validate_snapshot.sh).
  Child c = spawn({program("killable"), "2000"}, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir}}));
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(c.read_line(60000), "ready 2000");

  std::string by_dir = fresh_dir("snapshot-by-dir") + "/copy";
  RunResult s = run({cuprobe_bin(), "snapshot", "-o", by_dir, dir});
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.err.find("1 trace ("), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("copied to " + by_dir), std::string::npos) << s.err;
  ASSERT_EQ(traces_in(by_dir).size(), 1u);
  // The copy holds what was written: the header and the chunks it claims, not the running
  // process's reserve (its file is 1 MiB and more while it runs).
  {
    std::string copy = traces_in(by_dir)[0];
    trace::FileHeader h{};
    std::ifstream(copy, std::ios::binary).read(reinterpret_cast<char*>(&h), sizeof h);
    EXPECT_EQ(fs::file_size(copy), trace::kFileHeaderSize + uint64_t(h.chunks_claimed) * trace::kChunkSize);
    EXPECT_LT(fs::file_size(copy), fs::file_size(traces_in(dir)[0]));
  }
  auto lines = dump(by_dir);
  ASSERT_EQ(of_type(lines, "process").size(), 1u);
  EXPECT_EQ(of_type(lines, "process")[0]["state"], "snapshot");
  size_t mallocs = of_type(lines, "call", "cudaMalloc").size();
  EXPECT_GE(mallocs, 2000u);

  // The traced process's pid: its run directory is found through the trace it has open.
  std::string by_pid = fresh_dir("snapshot-by-pid") + "/copy";
  RunResult p = run({cuprobe_bin(), "snapshot", "-q", "-o", by_pid, std::to_string(c.pid)});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_EQ(p.err, "");
  ASSERT_EQ(traces_in(by_pid).size(), 1u);
  EXPECT_GE(of_type(dump(by_pid), "call", "cudaMalloc").size(), mallocs);

  // The job goes on; the first copy does not.
  usleep(300 * 1000);
  EXPECT_EQ(of_type(dump(by_dir), "call", "cudaMalloc").size(), mallocs);
  // Running when copied: not a process that died without a clean exit (oom-postmortem's finding
  // for a trace never finalized), and the original, still recording, is not marked.
  RunResult a = run({cuprobe_bin(), "analyze", "--json", by_dir});
  EXPECT_NE(a.status, 2) << a.err;
  json report = json::parse(a.out);
  EXPECT_EQ(report["summary"]["processes"], 1);
  EXPECT_EQ(report["summary"]["unfinished_processes"], 0);
  EXPECT_EQ(report["summary"]["per_process"][0]["state"], "running (snapshot)");
  for (const auto& f : report["findings"]) EXPECT_NE(f["rule"], "oom-postmortem") << f.dump();
  EXPECT_EQ(of_type(dump(dir), "process")[0]["state"], "incomplete");

  // Default place: beside the run directory.
  RunResult d = run({cuprobe_bin(), "snapshot", dir});
  ASSERT_EQ(d.status, 0) << d.err;
  size_t at = d.err.find("copied to " + dir + "-snapshot-");
  EXPECT_NE(at, std::string::npos) << d.err;

  kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
}

TEST(Snapshot, NamesWhatItCannotCopy) {
  RunResult none = run({cuprobe_bin(), "snapshot"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no run directory or process given"), std::string::npos) << none.err;

  RunResult bad = run({cuprobe_bin(), "snapshot", "/no/such/run"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("/no/such/run: not a run directory or a process id"), std::string::npos) << bad.err;

  std::string empty = fresh_dir("snapshot-empty");
  RunResult nothing = run({cuprobe_bin(), "snapshot", empty});
  EXPECT_EQ(nothing.status, 2);
  EXPECT_NE(nothing.err.find(fs::absolute(empty).lexically_normal().string() + ": no trace files (*.cuprobe"),
            std::string::npos)
      << nothing.err;

  // This test's own process is not traced, nor are its children.
  RunResult untraced = run({cuprobe_bin(), "snapshot", std::to_string(getpid())});
  EXPECT_EQ(untraced.status, 2);
  EXPECT_NE(untraced.err.find("have no trace open and no CUPROBE_OUT"), std::string::npos) << untraced.err;

  RunResult gone = run({cuprobe_bin(), "snapshot", "999999999"});
  EXPECT_EQ(gone.status, 2);
  EXPECT_NE(gone.err.find("no process 999999999"), std::string::npos) << gone.err;

  // An output directory with something in it is not written into.
  std::string full = fresh_dir("snapshot-full");
  std::ofstream(full + "/keep") << "x";
  std::string run_dir = fresh_dir("snapshot-src");
  RunResult r = record(run_dir, {program("fault_probe"), "malloc:100"}, shim_env(), {"-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  RunResult clash = run({cuprobe_bin(), "snapshot", "-o", full, run_dir});
  EXPECT_EQ(clash.status, 2);
  EXPECT_NE(clash.err.find("-o " + full + ": exists and is not an empty directory"), std::string::npos) << clash.err;
}

}  // namespace
}  // namespace cuprobe::test
