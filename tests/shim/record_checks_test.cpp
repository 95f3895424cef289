// `cuprobe record`'s checks before and after the job (issue 11, item 8): the run directory made
// private and refused when someone else can write into it, option values and inherited CUPROBE_*
// values the shim would not take, a shim path LD_PRELOAD cannot carry, programs the loader will
// not preload into (setuid, static, sudo, env -i), and why no trace came. And the shim's side:
// under plain LD_PRELOAD a value it cannot read is reported once and the default is used, once
// per job rather than per program (issue 28 item 5).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kOtherUid = 65534;  // nobody

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + needle.size())) ++n;
  return n;
}

// A command that leaves `marker` behind when it runs at all.
std::vector<std::string> toucher(const std::string& marker) { return {"sh", "-c", "touch '" + marker + "'"}; }

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::vector<std::string> trace_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".cuprobe") out.push_back(e.path().string());
  }
  return out;
}

// Refused before the job started: exit 2, the message names the directory, the job never ran.
void expect_refused(const RunResult& r, const std::string& dir, const std::string& marker, const std::string& why) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("cannot use run directory " + dir + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not started"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker)) << "the job must not run";
}

TEST(RecordChecks, NewRunDirectoriesArePrivateLikeTheShims) {
  std::string base = fresh_dir("private");
  std::string dir = base + "/a/b/run";
  RunResult r = record(dir, {"true"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const std::string& d : {base + "/a", base + "/a/b", dir}) {
    EXPECT_EQ(mode_of(d) & 077, 0u) << d << ": only its owner may enter or write (mode 0700 like the shim's)";
    struct stat st {};
    ASSERT_EQ(stat(d.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, geteuid());
  }
  EXPECT_EQ(mode_of(dir), 0700u);
}

TEST(RecordChecks, RunDirectoryOthersCanWriteIntoIsRefused) {
  std::string base = fresh_dir("writable");
  std::string marker = base + "/ran";
  struct Case {
    mode_t mode;
    const char* who;
  };
  for (Case c : {Case{0777, "its group and all users"}, Case{01777, "its group and all users"},
                 Case{0770, "its group"}, Case{0757, "all users"}, Case{02775, "its group"}}) {
    std::string dir = fresh_dir("writable-dir");
    ASSERT_EQ(chmod(dir.c_str(), c.mode), 0);
    RunResult r = record(dir, toucher(marker));
    SCOPED_TRACE("mode " + std::to_string(c.mode));
    expect_refused(r, dir, marker, std::string("it is writable by ") + c.who);
    EXPECT_NE(r.err.find("chmod go-w " + dir), std::string::npos) << "the fix is named: " << r.err;
    EXPECT_EQ(mode_of(dir), c.mode) << "record changes nothing of a directory it refuses";
  }
  // The same directory once fixed as suggested.
  std::string dir = fresh_dir("writable-fixed");
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  RunResult r = record(dir, toucher(marker));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(marker));
}

TEST(RecordChecks, RunDirectoryOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory to another user (chown) needs root";
  std::string base = fresh_dir("foreign");
  std::string marker = base + "/ran";
  for (mode_t mode : {0777, 0755, 01777}) {
    std::string dir = fresh_dir("foreign-dir");
    ASSERT_EQ(chown(dir.c_str(), kOtherUid, kOtherUid), 0);
    ASSERT_EQ(chmod(dir.c_str(), mode), 0);
    RunResult r = record(dir, toucher(marker));
    expect_refused(r, dir, marker, "it belongs to another user");
    EXPECT_NE(r.err.find("uid 65534"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("choose a directory of your own"), std::string::npos) << r.err;
  }
}

TEST(RecordChecks, SymbolicLinksAreFollowedOnlyWhenTheShimWouldFollowThem) {
  std::string base = fresh_dir("links");
  std::string marker = base + "/ran";
  std::string target = fresh_dir("links-target");
  std::string ours = base + "/ours";
  fs::create_symlink(target, ours);
  RunResult r = record(ours, toucher(marker));
  EXPECT_EQ(r.status, 0) << "a link of our own to a directory of our own: " << r.err;
  EXPECT_TRUE(fs::exists(marker));
  fs::remove(marker);

  if (geteuid() != 0) GTEST_SKIP() << "giving a link to another user (lchown) needs root";
  std::string theirs = base + "/theirs";
  fs::create_symlink(target, theirs);
  ASSERT_EQ(lchown(theirs.c_str(), kOtherUid, kOtherUid), 0);
  r = record(theirs, toucher(marker));
  expect_refused(r, theirs, marker, "symbolic link owned by another user");
}

TEST(RecordChecks, RunDirectoryThatIsNotADirectoryIsRefused) {
  std::string base = fresh_dir("notdir");
  std::string marker = base + "/ran";
  std::string file = base + "/file";
  std::ofstream(file) << "x";
  expect_refused(record(file, toucher(marker)), file, marker, "is not a directory");
  // Nor can anything be created beneath a file.
  RunResult r = record(file + "/run", toucher(marker));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_FALSE(fs::exists(marker));
}

TEST(RecordChecks, OptionValuesAreCheckedBeforeTheJobStarts) {
  std::string base = fresh_dir("options");
  std::string marker = base + "/ran";
  for (std::vector<std::string> opts : std::vector<std::vector<std::string>>{
           {"--max-mb", "-1"}, {"--max-mb", "abc"}, {"--max-mb", ""}, {"--max-mb", "12MiB"},
           {"--clock", "sundial"}, {"--stacks", "sometimes"}, {"--stack-depth", "0"}, {"--stack-depth", "x"},
           {"--stack-min-bytes", "lots"}}) {
    RunResult r = record(base + "/run", toucher(marker), {}, opts);
    EXPECT_EQ(r.status, 2) << opts[0] << " " << opts[1] << ": " << r.err;
    EXPECT_NE(r.err.find(opts[0]), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(marker)) << opts[0] << " " << opts[1];
  }
}

TEST(RecordChecks, InheritedVariablesTheShimWouldNotTakeStopRecord) {
  std::string base = fresh_dir("inherited");
  std::string marker = base + "/ran";
  Env bad = {{"CUPROBE_MAX_MB", "abc"},          {"CUPROBE_MAX_MB", "-1"},
             {"CUPROBE_MAX_MB", " 12"},          {"CUPROBE_CLOCK", "sundial"},
             {"CUPROBE_STACKS", "sometimes"},    {"CUPROBE_STACK_DEPTH", "0"},
             {"CUPROBE_STACK_DEPTH", "65"},      {"CUPROBE_STACK_MIN_BYTES", "1MiB"},
             {"CUPROBE_MEM_SAMPLE_MS", "-5"},    {"CUPROBE_LAUNCH_EVENTS", "maybe"},
             {"CUPROBE_QUIET", "loud"},          {"CUPROBE_DISABLE", "perhaps"}};
  for (const auto& [name, value] : bad) {
    RunResult r = record(base + "/run", toucher(marker), {{name, value}});
    EXPECT_EQ(r.status, 2) << name << "=" << value << ": " << r.err;
    EXPECT_NE(r.err.find(name + "=" + value + " in the environment is not "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not started"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(marker)) << name << "=" << value;
  }
  Env good = {{"CUPROBE_MAX_MB", "64"},        {"CUPROBE_LAUNCH_EVENTS", "0"}, {"CUPROBE_CLOCK", "monotonic"},
              {"CUPROBE_STACK_DEPTH", "8"},    {"CUPROBE_MEM_SAMPLE_MS", "0"}, {"CUPROBE_QUIET", "no"},
              {"CUPROBE_STACKS", "off"},       {"CUPROBE_STACK_MIN_BYTES", "4096"}, {"CUPROBE_LAUNCH_EVENTS", "TRUE"},
              {"CUPROBE_MAX_MB", ""}};
  for (const auto& [name, value] : good) {
    std::string dir = base + "/good-" + name + "-" + value;
    RunResult r = record(dir, toucher(marker), {{name, value}});
    EXPECT_EQ(r.status, 0) << name << "=" << value << ": " << r.err;
    EXPECT_TRUE(fs::exists(marker)) << name << "=" << value;
    fs::remove(marker);
  }
  // An option replaces the inherited value, so a bad one does not matter then.
  RunResult r = record(base + "/override", toucher(marker), {{"CUPROBE_MAX_MB", "abc"}}, {"--max-mb", "64"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(marker));
}

TEST(RecordChecks, ShimPathLdPreloadCannotCarryIsRefused) {
  std::string base = fresh_dir("shimpath");
  std::string marker = base + "/ran";
  for (const char* sub : {"with space", "with:colon"}) {
    fs::create_directories(base + "/" + sub);
    std::string shim = base + "/" + sub + "/libcuprobe.so";
    fs::copy_file(shim_file(), shim);
    RunResult r = record(base + "/run", toucher(marker), {{"CUPROBE_SHIM", shim}});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("the shim's path " + shim + " contains a "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("LD_PRELOAD cannot carry"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("CUPROBE_SHIM"), std::string::npos) << "the way out is named: " << r.err;
    EXPECT_FALSE(fs::exists(marker)) << sub;
  }
}

TEST(RecordChecks, SetuidProgramIsNamedAsTheReasonNothingWasTraced) {
  if (geteuid() != 0) GTEST_SKIP() << "a program setuid to another user needs root to make (chown)";
  std::string base = fresh_dir("privileged");
  std::string id = base + "/id-as-nobody";
  fs::copy_file("/usr/bin/id", id);
  ASSERT_EQ(chown(id.c_str(), kOtherUid, kOtherUid), 0);
  ASSERT_EQ(chmod(id.c_str(), 04755), 0);
  std::string dir = base + "/run";
  RunResult r = record(dir, {id, "-u"});
  ASSERT_EQ(r.status, 0) << r.err;
  if (r.out != "65534\n") GTEST_SKIP() << "setuid bits have no effect here (nosuid mount?): " << r.out;
  EXPECT_EQ(count(r.err, id + " is setuid "), 2u) << "a warning before it starts and the reason after: " << r.err;
  EXPECT_NE(r.err.find("ignores LD_PRELOAD"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no trace in " + dir + ": " + id + " is setuid"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cudart"), std::string::npos) << "not the static-cudart explanation: " << r.err;

  // The same program without the bit is not warned about.
  ASSERT_EQ(chmod(id.c_str(), 0755), 0);
  r = record(base + "/run2", {id, "-u"});
  EXPECT_EQ(r.err.find(" is setuid"), std::string::npos) << r.err;
}

TEST(RecordChecks, StaticallyLinkedProgramIsNamed) {
  std::string ldconfig;
  for (const char* p : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
    if (access(p, X_OK) == 0) ldconfig = p;
  }
  // glibc's ldconfig is a static (PIE) executable wherever glibc is the C library.
  if (ldconfig.empty()) GTEST_SKIP() << "no ldconfig";
  std::string dir = fresh_dir("static") + "/run";
  RunResult r = record(dir, {ldconfig, "--version"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, " is statically linked"), 2u) << r.err;
  EXPECT_NE(r.err.find("cuprobe record: warning: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no trace in " + dir + ": "), std::string::npos) << r.err;
}

TEST(RecordChecks, LaunchersThatClearTheEnvironmentAreNamed) {
  std::string base = fresh_dir("launchers");
  RunResult r = record(base + "/env", {"env", "-i", "true"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, "env -i starts the command with an empty environment"), 2u) << r.err;
  // env that keeps the environment: what it runs is looked at instead.
  r = record(base + "/env2", {"env", "-u", "B", "A=1", "true"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  // sudo is named whether or not it is installed (then the job fails to start, 127).
  r = record(base + "/sudo", {"sudo", "-n", "true"});
  EXPECT_NE(r.err.find("warning: sudo starts what it runs with a new environment"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sudo cuprobe record"), std::string::npos) << "the fix is named: " << r.err;
}

TEST(RecordChecks, NoTraceIsExplainedAndTheExitStatusKept) {
  std::string base = fresh_dir("notrace");
  RunResult r = record(base + "/plain", {"sh", "-c", "exit 3"});
  EXPECT_EQ(r.status, 3) << "the job's status, traced or not";
  EXPECT_NE(r.err.find("no trace in " + base + "/plain: no process of the command made a CUDA or cuDNN call"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("LD_PRELOAD did not reach"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;

  r = record(base + "/disabled", {"true"}, {{"CUPROBE_DISABLE", "1"}});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("CUPROBE_DISABLE=1 is set"), std::string::npos) << r.err;

  // A job that puts a file where the run directory was: the shim refuses it (its own message),
  // and record says what changed rather than blaming CUDA.
  std::string dir = base + "/replaced";
  r = record(dir, {"sh", "-c", "rmdir '" + dir + "' && touch '" + dir + "' && " + program("exercise_cudart") +
                                   " >/dev/null"});
  EXPECT_NE(r.err.find("cuprobe: cannot use run directory " + dir), std::string::npos) << "the shim's: " << r.err;
  EXPECT_NE(r.err.find("no trace in " + dir + ": the run directory changed while the command ran: it exists and "
                       "is not a directory"),
            std::string::npos)
      << r.err;

  r = record(base + "/quiet", {"sh", "-c", "exit 4"}, {}, {"--quiet"});
  EXPECT_EQ(r.status, 4);
  EXPECT_EQ(r.err, "") << "--quiet: nothing but the command's own output";
}

// ---- The shim under plain LD_PRELOAD -------------------------------------------------------

Env preload_env(const std::string& out, const Env& extra) {
  Env env = {{"LD_PRELOAD", shim_preload()}, {"CUPROBE_OUT", out}};
  env.insert(env.end(), extra.begin(), extra.end());
  return shim_env(env);
}

TEST(RecordChecks, ShimWarnsOnceAboutAValueItCannotReadAndUsesTheDefault) {
  std::string prog = program("exercise_cudart");
  {
    // Two programs under one shell: the shell's shim says it, and what it runs does not again.
    std::string dir = fresh_dir("shim-maxmb");
    RunResult r = run({"sh", "-c", prog + " >/dev/null && " + prog + " >/dev/null"},
                      preload_env(dir, {{"CUPROBE_MAX_MB", "abc"}}));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(count(r.err, "cuprobe: CUPROBE_MAX_MB=abc is not a number of MiB; using the default 4096\n"), 1u)
        << r.err;
    EXPECT_EQ(trace_files(dir).size(), 2u) << "both still traced";
  }
  struct Case {
    const char* name;
    const char* value;
    const char* says;
  };
  for (Case c : {Case{"CUPROBE_MAX_MB", "-1", "is not a number of MiB; using the default 4096"},
                 Case{"CUPROBE_CLOCK", "sundial", "is not auto, monotonic or tsc; using auto"},
                 Case{"CUPROBE_STACKS", "sometimes", "is not off, errors, alloc or all; using the default, alloc"},
                 Case{"CUPROBE_STACK_DEPTH", "abc", "is not a number of frames from 1 to 64; using the default 32"},
                 Case{"CUPROBE_STACK_DEPTH", "100", "is not a number of frames from 1 to 64; using the default 32"},
                 Case{"CUPROBE_STACK_MIN_BYTES", "1MiB", "is not a number of bytes (digits only); using the default"},
                 Case{"CUPROBE_MEM_SAMPLE_MS", "-5", "is not a number of milliseconds; using the default 500"},
                 Case{"CUPROBE_LAUNCH_EVENTS", "maybe", "is not 1 or 0 (true/false, yes/no, on/off); using 0"},
                 Case{"CUPROBE_DISABLE", "perhaps", "is not 1 or 0 (true/false, yes/no, on/off); using 0"}}) {
    std::string dir = fresh_dir("shim-var");
    RunResult r = run({prog}, preload_env(dir, {{c.name, c.value}}));
    std::string line = std::string("cuprobe: ") + c.name + "=" + c.value + " " + c.says;
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(count(r.err, line), 1u) << line << "\n" << r.err;
    EXPECT_EQ(trace_files(dir).size(), 1u) << c.name << "=" << c.value;
  }
  // Quiet means quiet; a quiet flag it cannot read is not quiet.
  std::string dir = fresh_dir("shim-quiet");
  RunResult r = run({prog}, preload_env(dir, {{"CUPROBE_MAX_MB", "abc"}, {"CUPROBE_QUIET", "1"}}));
  EXPECT_EQ(r.err.find("cuprobe:"), std::string::npos) << r.err;
  r = run({prog}, preload_env(fresh_dir("shim-loud"), {{"CUPROBE_QUIET", "loud"}}));
  EXPECT_NE(r.err.find("cuprobe: CUPROBE_QUIET=loud is not 1 or 0"), std::string::npos) << r.err;
}

// A job of a parent and the child it starts (tests/programs/forker: a parent, its forked child,
// which execs the same program again), each with the shim. A value that only its own reader
// checks (the fault plan, the memory cap, the capture window) is said once for the job, not by
// every program: the first shim to refuse it removes it, as it removes the values it refuses.
TEST(RecordChecks, ShimSaysOncePerJobWhatItsReadersRefuse) {
  const std::string forker = program("forker");
  const std::string plan_line = "cuprobe: the fault plan (CUPROBE_FAULTS) not used, nothing will be injected";
  {
    // Under record, the plan inherited from the environment stops record, which says why once.
    std::string dir = fresh_dir("once-record-inherited");
    RunResult r = record(dir + "/run", {forker}, shim_env({{"CUPROBE_FAULTS", "alloc:OOM,nth=x"}}));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(count(r.err, "'nth=x'"), 1u) << r.err;
    EXPECT_EQ(count(r.err, plan_line), 0u) << r.err;
    EXPECT_NE(r.err.find("not started"), std::string::npos) << r.err;
  }
  {
    // Under record, a plan the job's launcher sets for the programs it starts: the job says it
    // once, every process is traced, and nothing is injected anywhere.
    std::string dir = fresh_dir("once-record-job");
    RunResult r = record(dir, {"env", "CUPROBE_FAULTS=alloc:OOM,nth=x", forker}, shim_env());
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(count(r.err, plan_line), 1u) << r.err;
    EXPECT_EQ(trace_files(dir).size(), 3u) << "parent, forked child, exec'd program";
    for (const auto& c : of_type(dump(dir), "call")) EXPECT_FALSE(c.contains("injected")) << c.dump();
  }
  {
    // Plain LD_PRELOAD: the same for the memory cap and for a capture window another NVTX tool
    // keeps the shim from opening.
    std::string dir = fresh_dir("once-preload");
    RunResult r = run({forker}, preload_env(dir + "/cap", {{"CUPROBE_MEM_CAP", "lots"}}));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(count(r.err, "cuprobe: the memory cap (CUPROBE_MEM_CAP) not used"), 1u) << r.err;
    EXPECT_EQ(trace_files(dir + "/cap").size(), 3u);
    r = run({forker}, preload_env(dir + "/nvtx", {{"CUPROBE_WINDOW_NVTX", "step"},
                                                  {"NVTX_INJECTION64_PATH", "/nonexistent/libtool.so"}}));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(count(r.err, "cuprobe: CUPROBE_WINDOW_NVTX=step needs the shim as the NVTX tool"), 1u) << r.err;
  }
  {
    // Record refuses that window inherited, as it refuses --window-nvtx then.
    std::string dir = fresh_dir("once-record-nvtx");
    RunResult r = record(dir + "/run", {forker}, shim_env({{"CUPROBE_WINDOW_NVTX", "step"},
                                                           {"NVTX_INJECTION64_PATH", "/nonexistent/libtool.so"}}));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(count(r.err, "CUPROBE_WINDOW_NVTX=step in the environment needs cuprobe as the job's NVTX tool"), 1u)
        << r.err;
    EXPECT_TRUE(trace_files(dir + "/run").empty()) << r.err;
  }
}

TEST(RecordChecks, ShimTakesTheDefaultRatherThanAHalfReadValue) {
  // atoi("abc") used to be depth 0, clamped to a single frame.
  std::string dir = fresh_dir("shim-depth");
  RunResult r = run({program("stack_chain")}, preload_env(dir, {{"CUPROBE_STACK_DEPTH", "abc"}}));
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  std::map<int, nlohmann::json> stacks;
  for (const auto& s : of_type(lines, "stack")) stacks[s["id"].get<int>()] = s;
  bool found = false;
  for (const auto& c : of_type(lines, "call", "cudaMalloc")) {
    if (c["size"] != 2 << 20 || !c.contains("stack")) continue;
    found = true;
    EXPECT_GE(stacks.at(c["stack"].get<int>())["native"].size(), 4u) << "the default depth, 32";
  }
  EXPECT_TRUE(found) << r.err;
}


TEST(RecordChecks, AFaultPlanFifoNobodyWritesToIsRefusedNotWaitedOn) {
  std::string dir = fresh_dir("faults-fifo");
  std::string fifo = dir + "/plan.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string marker = dir + "/ran";
  auto r = run({cuprobe_bin(), "record", "-o", dir + "/run", "--faults", fifo, "--"}, {});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("a FIFO with nothing written to it"), std::string::npos) << r.err;
  // A pipe that is written to (what --faults <(...) gives) is read.
  auto piped = run({"bash", "-c",
                    cuprobe_bin() + " record -q -o " + dir + "/run2 --faults <(echo '{\"rules\":[]}') -- true"},
                   shim_env());
  EXPECT_EQ(piped.status, 0) << piped.err;
}

}  // namespace
}  // namespace cuprobe::test
