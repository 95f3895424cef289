// Untrusted files and paths (issue 26, common/safe_files.h, cmds/output_file.h): nothing cuprobe
// opens or writes can hang, crash, clobber or mislead. A FIFO named as a plan or alerts file is
// refused, not waited on; a plan file rewritten while jobs start kills none of them; links planted
// by another user in a shared directory are never written through; directories others can change
// are refused; values the shim would reject are refused by record first; trace bytes reach
// neither SQLite's JSON nor the terminal raw. The tests that need a second user (chown to nobody)
// need root, as CI has.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kOtherUid = 65534;  // nobody

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A plan file of `n` well-formed pins (about 100 bytes each).
std::string plan_text(int n) {
  std::string s = "{\"format\": \"cuprobe-plans/1\", \"plans\": [\n";
  for (int i = 0; i < n; ++i) {
    char pin[160];
    snprintf(pin, sizeof pin, "%s{\"problem\": \"conv %d\", \"pin\": \"h=%016x s=backend e=%d v=91900 t=0.125\"}\n",
             i ? "," : "", i, i + 1, i % 40);
    s += pin;
  }
  return s + "]}\n";
}

// A directory like /tmp: everyone may create entries, only their owner may remove them.
std::string shared_sticky_dir(const std::string& tag) {
  std::string d = fresh_dir(tag);
  EXPECT_EQ(chmod(d.c_str(), 01777), 0);
  return d;
}

// A symbolic link at `link` to `target`, owned by nobody, as nobody would plant it.
void plant_link(const std::string& target, const std::string& link) {
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0) << link;
  ASSERT_EQ(lchown(link.c_str(), kOtherUid, kOtherUid), 0) << link;
}

// A root-owned 0600 file whose content must survive.
std::string victim(const std::string& dir, const std::string& name) {
  std::string v = dir + "/" + name;
  write_file(v, "precious\n");
  EXPECT_EQ(chmod(v.c_str(), 0600), 0);
  return v;
}

// ---- Inputs ----------------------------------------------------------------------------------

TEST(UntrustedFiles, APlanFileFifoIsRefusedNotWaitedOn) {
  std::string dir = fresh_dir("pin-fifo");
  std::string fifo = dir + "/plans.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  RunResult r = run({"timeout", "60", cuprobe_bin(), "record", "-o", dir + "/run", "--pin-plans", fifo, "--", "true"},
                    shim_env());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("is a FIFO (named pipe); give a regular file"), std::string::npos) << r.err;
  r = run({"timeout", "60", cuprobe_bin(), "plans", "show", fifo}, {});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("is a FIFO"), std::string::npos) << r.err;
  // Under plain LD_PRELOAD the job starts (it used to block in the shim's constructor), the shim
  // says why nothing is pinned.
  r = run({"timeout", "60", program("frontend_search")},
          shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir + "/preload"}, {"CUPROBE_PIN_PLANS", fifo}}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("CUPROBE_PIN_PLANS=" + fifo + ": " + fifo + " is a FIFO"), std::string::npos) << r.err;
}

// The shim used to map the plan file: a job starting while the file was rewritten in place died
// of SIGBUS (59 of 100 starts with a 1.2 MB file). It reads a private copy now.
TEST(UntrustedFiles, APlanFileRewrittenWhileJobsStartKillsNone) {
  std::string dir = fresh_dir("pin-rewrite");
  std::string plans = dir + "/plans.json";
  const std::string big = plan_text(12000);
  ASSERT_GT(big.size(), 1000000u);
  write_file(plans, big);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    // What `cp new.json plans.json` does: truncate, then write in pieces.
    while (!stop.load()) {
      int fd = open(plans.c_str(), O_WRONLY | O_TRUNC);
      if (fd < 0) continue;
      for (size_t at = 0; at < big.size();) {
        ssize_t n = write(fd, big.data() + at, std::min<size_t>(65536, big.size() - at));
        if (n <= 0) break;
        at += size_t(n);
      }
      close(fd);
    }
  });
  int killed = 0, failed = 0;
  std::string last_err;
  for (int i = 0; i < 100; ++i) {
    RunResult r = run({"true"}, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir + "/run"},
                                          {"CUPROBE_QUIET", "1"}, {"CUPROBE_PIN_PLANS", plans}}));
    if (r.status >= 128) ++killed;
    else if (r.status != 0) ++failed;
    if (r.status != 0) last_err = r.err;
  }
  stop = true;
  writer.join();
  EXPECT_EQ(killed, 0) << "jobs killed by a signal while the plan file was rewritten; " << last_err;
  EXPECT_EQ(failed, 0) << last_err;
}

TEST(UntrustedFiles, RecordRefusesWhatTheShimWouldNotPinWithTheShimsWords) {
  std::string dir = fresh_dir("pin-shim-words");
  std::string bad = dir + "/plans.json";
  // JSON that `plans show` reads, with a pin string the shim rejects: record used to say
  // "pinning 1 plan" and the job then pinned nothing.
  write_file(bad, "{\"format\": \"cuprobe-plans/1\", \"plans\": [{\"hash\": \"0x1\", \"api\": \"backend\", "
                  "\"engine\": 1, \"pin\": \"h=zz s=backend e=1\"}]}");
  RunResult r = record(dir + "/run", {"true"}, shim_env(), {"--pin-plans", bad});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("a \"pin\" string near byte"), std::string::npos) << r.err;
  // Larger than the shim reads: refused before anything is read into memory.
  std::string huge = dir + "/huge.json";
  {
    std::ofstream out(huge);
    out << "{";
  }
  ASSERT_EQ(truncate(huge.c_str(), (65ll << 20)), 0);
  r = record(dir + "/run2", {"true"}, shim_env(), {"--pin-plans", huge});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("is larger than 64 MiB"), std::string::npos) << r.err;
  // A good one is counted as the shim counts it.
  std::string good = dir + "/good.json";
  write_file(good, plan_text(3));
  r = record(dir + "/run3", {"true"}, shim_env(), {"--pin-plans", good});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("pinning 3 cuDNN plans"), std::string::npos) << r.err;
}

TEST(UntrustedFiles, CaptureWindowsBeyondTheShimsBoundAreRefused) {
  std::string dir = fresh_dir("window-bounds");
  for (const char* opt : {"--delay", "--duration"}) {
    RunResult r = record(dir + "/run", {"true"}, shim_env(), {opt, "3153600001"});
    EXPECT_EQ(r.status, 2) << opt << ": " << r.err;
    EXPECT_NE(r.err.find("up to 3153600000 (100 years)"), std::string::npos) << r.err;
  }
  RunResult r = record(dir + "/run", {"true"}, shim_env({{"CUPROBE_DELAY_S", "99999999999"}}));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("CUPROBE_DELAY_S=99999999999 in the environment is not a number of seconds up to"),
            std::string::npos)
      << r.err;
  r = record(dir + "/run4", {"true"}, shim_env(), {"--delay", "3153600000", "--duration", "3153600000"});
  EXPECT_EQ(r.status, 0) << "the bound itself is taken: " << r.err;
}

// ---- Alerts --------------------------------------------------------------------------------

TEST(UntrustedFiles, AnAlertsFifoIsRefusedAndNeverBlocksTheJob) {
  std::string dir = fresh_dir("alerts-fifo");
  std::string fifo = dir + "/alerts";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::vector<std::string> job = {program("fault_probe"), "malloc:100", "malloc:100"};
  RunResult r = record(dir + "/run", job, shim_env(), {"--alerts", fifo, "--fault", "alloc:OOM,nth=1"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--alerts " + fifo + ": " + fifo + " is not a regular file"), std::string::npos) << r.err;
  r = record(dir + "/run-env", job, shim_env({{"CUPROBE_ALERTS", "file:" + fifo}}), {"--fault", "alloc:OOM,nth=1"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("CUPROBE_ALERTS=file:" + fifo + " in the environment: " + fifo + " is not a regular file"),
            std::string::npos)
      << r.err;
  // Under plain LD_PRELOAD the first alert came inside the job's cudaMalloc and blocked there.
  std::vector<std::string> bounded = {"timeout", "60"};
  bounded.insert(bounded.end(), job.begin(), job.end());
  r = run(bounded, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", dir + "/preload"},
                             {"CUPROBE_FAULTS", "alloc:OOM,nth=1"}, {"CUPROBE_ALERTS", "file:" + fifo}}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("cannot write alerts to a file: " + fifo + " is not a regular file; name a file; writing them here"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cuprobe alert: "), std::string::npos) << r.err;
}

TEST(UntrustedFiles, AnAlertsLinkPlantedByAnotherUserIsNotFollowed) {
  if (geteuid() != 0) GTEST_SKIP() << "planting a link as another user (lchown) needs root";
  std::string safe = fresh_dir("alerts-victim");
  std::string target = victim(safe, "secret");
  std::string shared = shared_sticky_dir("alerts-shared");
  std::string link = shared + "/alerts.log";
  plant_link(target, link);
  std::vector<std::string> job = {program("fault_probe"), "malloc:100", "malloc:100"};
  RunResult r = record(fresh_dir("alerts-link-run"), job, shim_env(), {"--alerts", link, "--fault", "alloc:OOM,nth=1"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("is a symbolic link, which cuprobe does not follow"), std::string::npos) << r.err;
  r = run(job, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", fresh_dir("alerts-link-preload")},
                         {"CUPROBE_FAULTS", "alloc:OOM,nth=1"}, {"CUPROBE_ALERTS", "file:" + link}}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("cuprobe alert: "), std::string::npos) << "alerts go to standard error instead: " << r.err;
  EXPECT_EQ(read_file(target), "precious\n");
  // A file of another user (its hard link, say) is not appended to either.
  std::string theirs = shared + "/theirs.log";
  write_file(theirs, "");
  ASSERT_EQ(chown(theirs.c_str(), kOtherUid, kOtherUid), 0);
  r = record(fresh_dir("alerts-theirs-run"), job, shim_env(), {"--alerts", theirs});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("is a file of another user"), std::string::npos) << r.err;
}

// ---- Outputs -------------------------------------------------------------------------------

// A small real run to export: the cuDNN double's search program.
const std::string& recorded_run() {
  static const std::string dir = [] {
    std::string d = fresh_dir("untrusted-run");
    RunResult r = record(d, {program("frontend_search")}, shim_env(), {"-q"});
    EXPECT_EQ(r.status, 0) << r.err;
    return d;
  }();
  return dir;
}

struct Writer {
  std::string name;
  std::vector<std::string> argv_before_out;  // cuprobe ARGS... -o OUT
  std::vector<std::string> argv_after_out;
};

std::vector<Writer> writers() {
  return {{"perfetto", {"export", "--format", "perfetto"}, {recorded_run()}},
          {"chrome", {"export", "--format", "chrome"}, {recorded_run()}},
          {"sqlite", {"export", "--format", "sqlite"}, {recorded_run()}},
          {"report", {"report"}, {recorded_run()}},
          {"plans", {"plans", "export"}, {recorded_run()}}};
}

RunResult write_with(const Writer& w, const std::string& out) {
  std::vector<std::string> argv = {cuprobe_bin()};
  argv.insert(argv.end(), w.argv_before_out.begin(), w.argv_before_out.end());
  argv.insert(argv.end(), {"-q", "-o", out});
  argv.insert(argv.end(), w.argv_after_out.begin(), w.argv_after_out.end());
  return run(argv, {});
}

TEST(UntrustedFiles, NoWriterFollowsLinksPlantedByAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "planting a link as another user (lchown) needs root";
  std::string safe = fresh_dir("writers-victims");
  std::string shared = shared_sticky_dir("writers-shared");
  for (const Writer& w : writers()) {
    std::string out = shared + "/" + w.name + ".out";
    // Every name the writers used to write through, and the destination itself.
    std::vector<std::string> targets;
    for (const std::string& name : {out, out + ".part", out + ".tmp"}) {
      targets.push_back(victim(safe, w.name + "-" + fs::path(name).filename().string()));
      plant_link(targets.back(), name);
    }
    RunResult r = write_with(w, out);
    EXPECT_LE(r.status, 1) << w.name << ": " << r.err;
    for (const auto& t : targets) EXPECT_EQ(read_file(t), "precious\n") << w.name << " wrote through a link to " << t;
    struct stat st {};
    ASSERT_EQ(lstat(out.c_str(), &st), 0) << w.name;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << w.name << ": the link was replaced by the output";
    EXPECT_EQ(st.st_uid, geteuid()) << w.name;
    EXPECT_GT(st.st_size, 0) << w.name;
  }
  // And no temporary of ours is left beside them (the planted links are still there).
  for (const auto& e : fs::directory_iterator(shared)) {
    if (e.is_symlink()) continue;
    EXPECT_NE(e.path().extension(), ".part") << e.path();
  }
}

TEST(UntrustedFiles, WritersRefuseDirectoriesOthersCanChange) {
  std::string open_dir = fresh_dir("writers-open");
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  for (const Writer& w : writers()) {
    RunResult r = write_with(w, open_dir + "/" + w.name + ".out");
    EXPECT_EQ(r.status, 2) << w.name << ": " << r.err;
    EXPECT_NE(r.err.find("is writable by its group and all users (mode 0777) without the sticky bit"), std::string::npos)
        << w.name << ": " << r.err;
    EXPECT_FALSE(fs::exists(open_dir + "/" + w.name + ".out")) << w.name;
  }
  // A subdirectory of such a directory too: it can be swapped for another user's.
  std::string below = open_dir + "/mine";
  ASSERT_EQ(mkdir(below.c_str(), 0700), 0);
  RunResult r = write_with(writers()[0], below + "/x.pftrace");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(open_dir + " is writable by its group and all users"), std::string::npos) << r.err;
  if (geteuid() == 0) {
    std::string theirs = fresh_dir("writers-theirs");
    ASSERT_EQ(chown(theirs.c_str(), kOtherUid, kOtherUid), 0);
    r = write_with(writers()[3], theirs + "/report.html");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("belongs to another user (uid 65534)"), std::string::npos) << r.err;
  }
}

TEST(UntrustedFiles, RunDirectoriesBelowADirectoryOthersCanChangeAreRefused) {
  std::string open_dir = fresh_dir("record-open-parent");
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  std::string run_dir = open_dir + "/sub";
  RunResult r = record(run_dir, {"true"}, shim_env());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(open_dir + " is writable by its group and all users (mode 0777) without the sticky bit"), std::string::npos)
      << r.err;
  // The shim under plain LD_PRELOAD records as asked and warns.
  r = run({program("frontend_search")}, shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", run_dir}}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("cuprobe: warning: run directory " + run_dir + " is not private: " + open_dir), std::string::npos)
      << r.err;
  // snapshot -o: the same rules as a run directory.
  if (geteuid() == 0) {
    std::string theirs = fresh_dir("snapshot-theirs");
    ASSERT_EQ(chown(theirs.c_str(), kOtherUid, kOtherUid), 0);
    ASSERT_EQ(chmod(theirs.c_str(), 0777), 0);
    r = run({cuprobe_bin(), "snapshot", "-q", "-o", theirs, recorded_run()}, {});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("belongs to another user"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(theirs));
  }
}

// ---- Bytes from traces -----------------------------------------------------------------------

TEST(UntrustedFiles, SqliteExportTakesArgumentsAndPathsThatAreNotUtf8) {
  // A command line (argv[0], set with bash's exec -a) and a run directory that are not UTF-8.
  std::string dir = fresh_dir("sqlite-bytes") + "/run-\xff";
  RunResult r = record(dir, {"bash", "-c", "exec -a $'caf\\xe9' " + program("frontend_search")}, shim_env(), {"-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::string out = fs::path(dir).parent_path().string() + "/x.sqlite";
  r = run({cuprobe_bin(), "export", "-q", "--format", "sqlite", "-o", out, dir}, {});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GT(fs::file_size(out), 0u);
}

TEST(UntrustedFiles, EscapeSequencesFromATraceAreNotPrintedRaw) {
  std::string dir = fresh_dir("escapes");
  // OSC 52 (write the clipboard), a title change, a screen clear, a forged line, 8-bit CSI and a
  // right-to-left override, in the host name and the command line.
  const std::string evil = "\\u001b]52;c;cHduZWQ=\\u0007\\u001b]0;title\\u0007\\u001b[2J\\ncuprobe: all clear\\u009b1m\\u202e";
  write_file(dir + "/evil.jsonl",
             "{\"type\":\"process\",\"pid\":1,\"host\":\"h" + evil + "\",\"cmdline\":[\"python\",\"x" + evil + "\"]}\n"
             "{\"type\":\"call\",\"api\":\"cudaMalloc\",\"ret\":2,\"ts_ns\":5,\"dur_ns\":10,\"pid\":1,\"tid\":1,"
             "\"device\":0,\"ptr\":\"0x0\",\"size\":1099511627776}\n");
  RunResult r = run({cuprobe_bin(), "analyze", "--no-color", dir + "/evil.jsonl"}, {});
  ASSERT_LE(r.status, 1) << r.err;
  for (char c : r.out + r.err) {
    unsigned char u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || u == '\n' || u == '\t') << "a raw control byte " << int(u) << " in:\n" << r.out;
    if (u < 0x20 && u != '\n' && u != '\t') break;
  }
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos) << "8-bit CSI printed raw";
  EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos) << "right-to-left override printed raw";
  EXPECT_NE(r.out.find("\\x1b]52;c;"), std::string::npos) << "the escape is shown, escaped:\n" << r.out;
  EXPECT_EQ(r.out.find("\ncuprobe: all clear"), std::string::npos) << "a line was forged:\n" << r.out;
}

}  // namespace
}  // namespace cuprobe::test
