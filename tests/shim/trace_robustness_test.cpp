// The trace under stress and abuse: many threads, SIGKILL, fatal signals, fork and exec, the
// size limit, file permissions, and readers given broken files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "support/run.h"
#include "trace/reader.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> trace_files(const std::string& dir) {
  auto files = reader::find_trace_files(dir);
  return files ? *files : std::vector<std::string>{};
}

TEST(TraceRobustness, SixteenThreadsTimesHundredThousandCallsGiveExactlyThatManyEvents) {
  std::string dir = fresh_dir("storm");
  RunResult r = record(dir, {program("thread_storm"), "16", "100000"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto t = reader::TraceFile::open(files[0]);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ((*t)->call_records(), 1600000u);
  EXPECT_EQ((*t)->stat(trace::kStatDroppedEvents), 0u);
  EXPECT_TRUE((*t)->diagnostics().empty());
  std::map<uint32_t, uint64_t> per_thread;
  uint64_t prev = 0;
  bool ordered = true;
  (*t)->for_each_event([&](const reader::Event& e) {
    per_thread[e.tid]++;
    ordered = ordered && e.ts_ns >= prev;
    prev = e.ts_ns;
  });
  EXPECT_TRUE(ordered);
  ASSERT_EQ(per_thread.size(), 16u);
  for (const auto& [tid, n] : per_thread) EXPECT_EQ(n, 100000u) << "thread " << tid;
}

TEST(TraceRobustness, SigkillLeavesATraceReadableUpToItsLastEvent) {
  std::string dir = fresh_dir("sigkill");
  Env env = shim_env({{"LD_PRELOAD", shim_preload()},
                      {"CUPROBE_OUT", dir}});
  Child c = spawn({program("killable"), "3000"}, env);
  ASSERT_GT(c.pid, 0);
  EXPECT_EQ(c.read_line(60000), "ready 3000");
  kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto t = reader::TraceFile::open(files[0]);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ((*t)->state(), trace::FileState::kRecording);
  EXPECT_GE((*t)->call_records(), 6000u);
  EXPECT_TRUE((*t)->diagnostics().empty());
  auto lines = dump(dir);
  EXPECT_EQ(of_type(lines, "process")[0]["state"], "incomplete");
  EXPECT_GE(of_type(lines, "call", "cudaMalloc").size(), 3000u);
}

// SIGTERM (torchrun stopping its workers, a scheduler) and Ctrl-C end a process that does not
// handle them: the trace says so (not "incomplete", which the analyzer reads as SIGKILL or the
// OOM killer), and the process still ends by that signal, at once.
TEST(TraceRobustness, SigtermAndSigintEndTheProcessAndTheTraceNamesTheSignal) {
  for (int sig : {SIGTERM, SIGINT}) {
    std::string dir = fresh_dir("sigterm");
    Child c = spawn({program("killable"), "500"}, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir}}));
    ASSERT_GT(c.pid, 0);
    EXPECT_EQ(c.read_line(60000), "ready 500");
    kill(c.pid, sig);
    EXPECT_EQ(c.wait(), 128 + sig);
    auto lines = dump(dir);
    ASSERT_EQ(of_type(lines, "process").size(), 1u);
    EXPECT_EQ(of_type(lines, "process")[0]["state"], "signaled");
    EXPECT_EQ(of_type(lines, "process")[0]["signal"], sig);
    auto analyze = run({cuprobe_bin(), "analyze", dir});
    EXPECT_EQ(analyze.out.find("ended without a clean exit"), std::string::npos) << analyze.out;
  }
}

// A signal the process was started with ignored (nohup, a launcher) stays ignored.
TEST(TraceRobustness, AnIgnoredSigtermStaysIgnored) {
  std::string dir = fresh_dir("sigterm-ignored");
  Child c = spawn({"bash", "-c", "trap '' TERM; exec " + program("killable") + " 500"},
                  shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir}}));
  ASSERT_GT(c.pid, 0);
  EXPECT_EQ(c.read_line(60000), "ready 500");
  kill(c.pid, SIGTERM);
  usleep(300000);
  EXPECT_EQ(kill(c.pid, 0), 0) << "SIGTERM ended a process that ignores it";
  kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
}

TEST(TraceRobustness, SegfaultFinalizesTheTraceAndStillKillsTheProcess) {
  // AddressSanitizer owns SIGSEGV in a sanitized build: it reports and exits with status 1.
  if (CUPROBE_SANITIZED) GTEST_SKIP() << "AddressSanitizer handles SIGSEGV itself";
  std::string dir = fresh_dir("segv");
  RunResult r = record(dir, {program("crasher"), "segv"});
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  EXPECT_NE(r.err.find("killed by SIGSEGV"), std::string::npos) << r.err;
  auto lines = dump(dir);
  auto p = of_type(lines, "process");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["state"], "signaled");
  EXPECT_EQ(p[0]["signal"], SIGSEGV);
  EXPECT_EQ(of_type(lines, "call").size(), 2u);
  auto crash = of_type(lines, "crash");
  ASSERT_EQ(crash.size(), 1u);
  EXPECT_EQ(crash[0]["signal"], SIGSEGV);
}

TEST(TraceRobustness, AbortFinalizesTheTraceAndStillAborts) {
  std::string dir = fresh_dir("abort");
  RunResult r = record(dir, {program("crasher"), "abort"});
  EXPECT_EQ(r.status, 128 + SIGABRT) << r.err;
  auto p = of_type(dump(dir), "process");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["state"], "signaled");
  EXPECT_EQ(p[0]["signal"], SIGABRT);
}

TEST(TraceRobustness, ForkAndExecChildrenWriteTheirOwnFiles) {
  std::string dir = fresh_dir("fork");
  // No periodic memory samples: under ThreadSanitizer the allocations are far enough apart to add one.
  RunResult r = record(dir, {program("forker")}, {{"CUPROBE_MEM_SAMPLE_MS", "0"}});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 3u);
  // Allocation sizes tell the three apart: 1000 parent, 2000 forked child, 3000 exec'd program.
  std::map<uint64_t, std::set<uint64_t>> sizes_by_file;
  std::map<uint64_t, int> calls_by_size;
  std::set<std::string> files;
  for (const auto& c : of_type(lines, "call", "cudaMalloc")) calls_by_size[c["size"]]++;
  EXPECT_EQ(calls_by_size[1000], 2);
  EXPECT_EQ(calls_by_size[2000], 2);
  EXPECT_EQ(calls_by_size[3000], 3);
  std::set<uint64_t> pids;
  std::multiset<std::string> states;
  for (const auto& p : procs) {
    pids.insert(p["pid"].get<uint64_t>());
    files.insert(p["file"].get<std::string>());
    states.insert(p["state"].get<std::string>());
  }
  // The forked child's file ends where it exec'd; the exec'd program continues in a new file.
  EXPECT_EQ(states, (std::multiset<std::string>{"exited", "exited", "exec"}));
  EXPECT_EQ(pids.size(), 2u);  // exec keeps the pid of the forked child
  EXPECT_EQ(files.size(), 3u);
  // Each file holds only its own process's calls: the parent's 4 calls, the child's 4, 6 exec'd;
  // plus the shim's memory samples: a baseline at each process's first allocation and one at
  // exit (none for the child, which exec'd instead of exiting).
  std::multiset<size_t> per_file;
  for (const auto& f : files) {
    auto t = reader::TraceFile::open(f);
    ASSERT_TRUE(t);
    per_file.insert((*t)->call_records());
  }
  EXPECT_EQ(per_file, (std::multiset<size_t>{4 + 2, 4 + 1, 6 + 2}));
}

// The forking thread's cache of legacy cuDNN problems held the parent's problem ids, which the
// child's own problem table handed out again for other problems: the child's first call was
// recorded as the child's later, different problem (issue 27). Each file must name its own.
TEST(TraceRobustness, ForkedChildRecordsItsOwnProblems) {
  std::string dir = fresh_dir("fork-problems");
  RunResult r = record(dir, {program("fork_cudnn")}, {{"CUPROBE_MEM_SAMPLE_MS", "0"}});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  std::map<uint64_t, uint64_t> parent_of;
  for (const auto& p : of_type(lines, "process")) parent_of[p["pid"]] = p["ppid"];
  ASSERT_EQ(parent_of.size(), 2u);
  std::map<uint64_t, std::vector<std::string>> problems;  // by pid, in call order
  for (const auto& c : of_type(lines, "call", "cudnnBatchNormalizationForwardInference")) {
    problems[c["pid"]].push_back(c.value("problem", std::string("(none)")));
  }
  const std::string big = "bn_fwd_infer x[8,16,4,4]f32 nchw mode:spatial";
  const std::string small = "bn_fwd_infer x[2,16,4,4]f32 nchw mode:spatial";
  for (const auto& [pid, ppid] : parent_of) {
    bool child = parent_of.count(ppid) != 0;
    std::vector<std::string> want = {big, child ? small : big};
    EXPECT_EQ(problems[pid], want) << (child ? "child" : "parent") << " pid " << pid;
  }
}

TEST(TraceRobustness, SizeLimitDropsAndCountsInsteadOfBlocking) {
  std::string dir = fresh_dir("limit");
  RunResult r = record(dir, {program("thread_storm"), "1", "100000"}, {}, {"--max-mb", "1", "--keep", "all"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("events were dropped"), std::string::npos) << r.err;
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto t = reader::TraceFile::open(files[0]);
  ASSERT_TRUE(t);
  uint64_t dropped = (*t)->stat(trace::kStatDroppedEvents);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ((*t)->stat(trace::kStatTraceLimitHit), 1u);
  EXPECT_EQ((*t)->call_records() + dropped, 100000u);
  EXPECT_LE(fs::file_size(files[0]), (1u << 20) + trace::kFileHeaderSize);
}

// By default the trace turns into a flight recorder at three quarters of the limit: nothing is
// dropped, the oldest routine calls of the last quarter are overwritten and counted.
TEST(TraceRobustness, SizeLimitByDefaultOverwritesTheOldestRoutineCalls) {
  std::string dir = fresh_dir("limit-ring");
  RunResult r = record(dir, {program("thread_storm"), "1", "100000"}, {}, {"--max-mb", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("the flight recorder of 1 process kept the last routine calls"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("were dropped"), std::string::npos) << r.err;
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto t = reader::TraceFile::open(files[0]);
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)->stat(trace::kStatDroppedEvents), 0u);
  EXPECT_EQ((*t)->stat(trace::kStatTraceLimitHit), 0u);
  const reader::Coverage& c = (*t)->coverage();
  EXPECT_EQ(c.keep, trace::KeepMode::kAuto);
  EXPECT_GT(c.overwritten_calls, 0u);
  EXPECT_EQ((*t)->call_records() + c.overwritten_calls, 100000u);
  EXPECT_LE(fs::file_size(files[0]), (1u << 20) + trace::kFileHeaderSize);
}

TEST(TraceRobustness, TraceFilesArePrivateAndTheRunDirectoryIsCreated) {
  std::string dir = fresh_dir("perm") + "/nested/run";
  RunResult r = record(dir, {program("crasher"), "abort"});
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  struct stat st {};
  ASSERT_EQ(stat(files[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(TraceRobustness, RunDirectoryThatIsAnotherUsersSymlinkIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a symlink owned by another user";
  std::string base = fresh_dir("symlink");
  std::string target = base + "/target";
  std::string link = base + "/link";
  fs::create_directories(target);
  fs::create_symlink(target, link);
  ASSERT_EQ(lchown(link.c_str(), 65534, 65534), 0);
  Env env = shim_env({{"LD_PRELOAD", shim_preload()},
                      {"CUPROBE_OUT", link}});
  RunResult r = run({program("exercise_cudart")}, env);
  EXPECT_EQ(r.status, 0);  // the job runs on untraced
  EXPECT_NE(r.err.find("symbolic link owned by another user"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(target));
}

TEST(TraceRobustness, DumpReportsUnreadableInputAndExitsTwoOnlyWhenNothingIsReadable) {
  std::string dir = fresh_dir("broken");
  RunResult missing = run({cuprobe_bin(), "dump", dir + "/nope"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no such file or directory"), std::string::npos) << missing.err;

  RunResult empty = run({cuprobe_bin(), "dump", dir});
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.err.find("no trace files"), std::string::npos) << empty.err;

  std::string junk = dir + "/junk.cuprobe";
  std::ofstream(junk) << std::string(100000, 'x');
  RunResult bad = run({cuprobe_bin(), "dump", junk});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("not a cuprobe trace"), std::string::npos) << bad.err;
}

TEST(TraceRobustness, TruncatedTraceIsReadUpToWhereItStops) {
  std::string dir = fresh_dir("truncated");
  RunResult r = record(dir, {program("thread_storm"), "1", "20000"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  uint64_t full = 0;
  {
    auto t = reader::TraceFile::open(files[0]);
    ASSERT_TRUE(t);
    full = (*t)->call_records();
  }
  // Cut the file in the middle of its third chunk.
  fs::resize_file(files[0], trace::kFileHeaderSize + 2 * trace::kChunkSize + 1000);
  RunResult d = run({cuprobe_bin(), "dump", files[0]});
  EXPECT_EQ(d.status, 0);
  EXPECT_NE(d.err.find("truncated"), std::string::npos) << d.err;
  auto t = reader::TraceFile::open(files[0]);
  ASSERT_TRUE(t);
  EXPECT_GT((*t)->call_records(), 1000u);
  EXPECT_LT((*t)->call_records(), full);
}

// At exit the file is cut to the chunks handed out (the segments reserved ahead of them go): a
// process that made two calls leaves its header and two chunks (192 KiB; 1,088 KiB before), read
// without a word about truncation; a long trace loses none of its records to the cut.
TEST(TraceRobustness, AtExitTheFileIsCutToWhatWasWritten) {
  std::string dir = fresh_dir("trimmed");
  RunResult r = record(dir, {program("two_calls")});
  ASSERT_EQ(r.status, 0) << r.err;
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  uint64_t bytes = fs::file_size(files[0]);
  EXPECT_LE(bytes, 256u * 1024) << files[0];
  EXPECT_EQ((bytes - trace::kFileHeaderSize) % trace::kChunkSize, 0u);
  auto t = reader::TraceFile::open(files[0]);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_GE((*t)->call_records(), 2u);  // the two calls and what the first event records of the device
  EXPECT_TRUE((*t)->diagnostics().empty()) << (*t)->diagnostics()[0];

  std::string big = fresh_dir("trimmed-big");
  ASSERT_EQ(record(big, {program("thread_storm"), "4", "20000"}).status, 0);
  auto storm = trace_files(big);
  ASSERT_EQ(storm.size(), 1u);
  trace::FileHeader h{};
  std::ifstream(storm[0], std::ios::binary).read(reinterpret_cast<char*>(&h), sizeof h);
  EXPECT_EQ(fs::file_size(storm[0]), trace::kFileHeaderSize + uint64_t(h.chunks_claimed) * trace::kChunkSize);
  auto s = reader::TraceFile::open(storm[0]);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)->call_records(), 80000u);
  EXPECT_EQ((*s)->stat(trace::kStatDroppedEvents), 0u);
  EXPECT_TRUE((*s)->diagnostics().empty()) << (*s)->diagnostics()[0];
}

}  // namespace
}  // namespace cuprobe::test
