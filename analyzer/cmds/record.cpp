// `cuprobe record`: runs a command with libcuprobe.so preloaded and the run directory set, passes
// its exit status through, and says where the trace is and whether anything went wrong.
//
// The environment it sets (LD_PRELOAD, CUPROBE_OUT, CUPROBE_*) is inherited by every child and
// exec'd program, so torchrun workers, multiprocessing and DataLoader workers are traced too.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "fault_plan.h"
#include "faults/plan_builder.h"
#include "trace/reader.h"

namespace cuprobe::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHelp = R"(Usage: cuprobe record [options] [--] COMMAND [ARGS...]

Runs COMMAND with the cuprobe shim preloaded. Every process of the job that makes a CUDA
runtime or cuDNN call writes one trace file into the run directory; children and exec'd
programs inherit the setup. COMMAND's exit status is passed through (128+N when it was killed
by signal N).

Options:
  -o, --output DIR    run directory (default: ./cuprobe-YYYYMMDD-HHMMSS in the current directory);
                      created if missing; refused if it already holds traces (see --append)
      --append        allow a run directory that already holds traces
      --launch-events record every kernel launch as an event (default: counted per thread and
                      device, which costs a few nanoseconds per launch)
      --max-mb N      per-process trace size limit in MiB (default 4096); past it, events are
                      dropped and counted, never waited for
      --clock KIND    timestamp source: auto (default; the invariant TSC when there is one) or
                      monotonic (CLOCK_MONOTONIC for every timestamp)
      --stacks MODE   which calls carry their call stack (native, and the Python lines when
                      the calling thread holds the GIL): off, errors (failed and injected calls),
                      alloc (default: errors, device allocations of --stack-min-bytes or more, and
                      the start of each cuDNN plan selection), all (every recorded call)
      --stack-depth N native frames kept per stack (default 32, at most 64)
      --stack-min-bytes BYTES
                      allocations that get a stack in alloc mode (default 1MiB)
  -q, --quiet         print nothing besides the command's own output
  -h, --help          this text

Fault mode (docs/faults.md): make chosen calls fail on purpose, before the real call runs.
      --fault SPEC    a rule: CALLS:ERROR[,KEY=VALUE...]; repeatable, rules are tried in order
                      and the first that fires replaces the call. Examples:
                        alloc:OOM,nth=3                   the 3rd device allocation fails
                        cudnn-execute:NOT_SUPPORTED,problem=conv_fwd x[64,first=2
                        cudaMalloc:OOM,size>=1GiB,p=0.1,seed=7
                        cudnn-finalize:NOT_SUPPORTED,engine=0,max=5
                      CALLS: alloc, host-alloc, memcpy, sync, cudnn-create, cudnn-execute,
                      cudnn-finalize, cudnn-find, cudnn-legacy-exec, or API names joined by |.
                      ERROR: OOM, NOT_SUPPORTED, NOT_SUPPORTED_SHAPE, NOT_SUPPORTED_LAYOUT,
                      BAD_PARAM, INTERNAL_ERROR, EXECUTION_FAILED, NOT_INITIALIZED, or a number.
                      When: nth=N every=K first=N after=N at=N+N... p=P seed=S max=N.
                      Which: size>=BYTES problem=TEXT|0xHASH problem~REGEX engine=N device=N
                      rank=N pid=N comm=NAME from=TIME until=TIME scope=process|thread name=ID
      --faults FILE   rules from a JSON file: {"rules": [...], "mem_cap": "8GiB"}
      --mem-cap CAP   device allocations fail with out-of-memory once the bytes live through
                      cuprobe's hooks would exceed CAP, and cudaMemGetInfo reports within it:
                      8GiB, 25% (of each device), or per device 0=8GiB,1=16GiB
      --replay-faults TRACE
                      inject exactly the faults recorded in an earlier run (directory or file)
A malformed plan stops here, before COMMAND starts, with what is wrong in it.

Environment set for COMMAND: LD_PRELOAD (the shim appended), CUPROBE_OUT (absolute run
directory), and CUPROBE_LAUNCH_EVENTS, CUPROBE_MAX_MB, CUPROBE_CLOCK, CUPROBE_FAULTS,
CUPROBE_MEM_CAP, CUPROBE_STACKS, CUPROBE_STACK_DEPTH, CUPROBE_STACK_MIN_BYTES when the options ask. Under plain LD_PRELOAD, set CUPROBE_FAULTS (rules
separated by ';') and CUPROBE_MEM_CAP yourself; a malformed plan is then reported on stderr and
nothing is injected.
Set CUPROBE_SHIM to use a shim other than the one installed beside this command.
)";

std::string default_run_dir() {
  char stamp[64];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "cuprobe-%Y%m%d-%H%M%S", &tm);
  std::string base = (fs::current_path() / stamp).string();
  std::string dir = base;
  for (int i = 2; fs::exists(dir); ++i) dir = fmt::format("{}-{}", base, i);
  return dir;
}

bool has_traces(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".cuprobe") return true;
  }
  return false;
}

pid_t g_child = -1;

// Signals sent to cuprobe by another process (kill, a container runtime stopping PID 1) go to
// the job. Those a terminal sends to the whole foreground group already reached it.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) kill(g_child, sig);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

std::string human_bytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.1f} GiB", double(n) / double(1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.1f} MiB", double(n) / double(1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.1f} KiB", double(n) / double(1ull << 10));
  return fmt::format("{} B", n);
}

void report(const std::string& dir) {
  auto files = reader::find_trace_files(dir);
  if (!files) {
    fmt::print(stderr, "cuprobe: no trace in {}: no process of the command made a CUDA runtime or cuDNN call "
                       "through the shim (statically linked cudart is not interposable)\n", dir);
    return;
  }
  uint64_t events = 0;
  uint64_t bytes = 0;
  uint64_t dropped = 0;
  uint64_t missing = 0;
  uint64_t rejected = 0;
  int unfinished = 0;
  std::map<std::string, uint64_t> injected;  // by fault rule
  for (const auto& path : *files) {
    std::error_code ec;
    bytes += fs::file_size(path, ec);
    auto t = reader::TraceFile::open(path);
    if (!t) {
      fmt::print(stderr, "cuprobe: {}\n", t.error().message);
      continue;
    }
    events += (*t)->call_records();
    dropped += (*t)->stat(trace::kStatDroppedEvents);
    missing += (*t)->stat(trace::kStatMissingSymbols);
    rejected += (*t)->stat(trace::kStatFaultPlanRejected);
    for (const auto& r : (*t)->fault_rules()) injected[r.name] += r.injected;
    if ((*t)->state() == trace::FileState::kRecording) ++unfinished;
  }
  fmt::print(stderr, "cuprobe: trace in {} ({} process{}, {} events, {})\n", dir, files->size(),
             files->size() == 1 ? "" : "es", events, human_bytes(bytes));
  if (dropped) fmt::print(stderr, "cuprobe: warning: {} events were dropped (trace size limit or full disk)\n", dropped);
  if (missing) fmt::print(stderr, "cuprobe: warning: {} calls found no real function to forward to\n", missing);
  if (rejected) fmt::print(stderr, "cuprobe: warning: {} process{} refused the fault plan; nothing was injected there\n",
                           rejected, rejected == 1 ? "" : "es");
  if (!injected.empty()) {
    uint64_t total = 0;
    std::string per_rule;
    for (const auto& [name, n] : injected) {
      total += n;
      per_rule += fmt::format("{}{} {}", per_rule.empty() ? "" : ", ", name, n);
    }
    fmt::print(stderr, "cuprobe: fault mode: {} call{} failed on purpose ({})\n", total, total == 1 ? "" : "s", per_rule);
  }
  if (unfinished) {
    fmt::print(stderr, "cuprobe: note: {} process{} ended without a clean exit (killed, _exit, or still running); "
                       "their traces are complete up to their last event\n", unfinished, unfinished == 1 ? "" : "es");
  }
  fmt::print(stderr, "cuprobe: next: cuprobe analyze {}   (or cuprobe dump {} for every call)\n", dir, dir);
}

}  // namespace

int cmd_record(const Args& args) {
  std::string out;
  bool append = false;
  bool quiet = false;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> fault_rules;
  std::vector<std::string> replay_rules;
  std::string mem_cap;
  std::string replay_from;
  size_t i = 0;
  auto value = [&](const std::string& opt) -> std::string {
    if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", opt));
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-h" || a == "--help") {
      fmt::print("{}", kHelp);
      return kExitOk;
    } else if (a == "-o" || a == "--output") {
      out = value(a);
    } else if (a.rfind("--output=", 0) == 0) {
      out = a.substr(9);
    } else if (a == "--append") {
      append = true;
    } else if (a == "--launch-events") {
      env.emplace_back("CUPROBE_LAUNCH_EVENTS", "1");
    } else if (a == "--max-mb") {
      env.emplace_back("CUPROBE_MAX_MB", std::to_string(parse_count(a, value(a))));
    } else if (a == "--clock") {
      std::string kind = value(a);
      if (kind != "auto" && kind != "monotonic" && kind != "tsc") {
        throw UsageError(fmt::format("--clock expects auto, monotonic or tsc, got '{}'", kind));
      }
      if (kind != "auto") env.emplace_back("CUPROBE_CLOCK", kind);
    } else if (a == "--stacks") {
      std::string mode = value(a);
      if (mode != "off" && mode != "errors" && mode != "alloc" && mode != "all") {
        throw UsageError(fmt::format("--stacks expects off, errors, alloc or all, got '{}'", mode));
      }
      env.emplace_back("CUPROBE_STACKS", mode);
    } else if (a == "--stack-depth") {
      unsigned long long n = parse_count(a, value(a));
      if (n < 1 || n > 64) throw UsageError(fmt::format("--stack-depth expects 1 to 64, got {}", n));
      env.emplace_back("CUPROBE_STACK_DEPTH", std::to_string(n));
    } else if (a == "--stack-min-bytes") {
      std::string v = value(a);
      uint64_t bytes = 0;
      if (!faults::parse_bytes(v.c_str(), v.size(), &bytes)) {
        throw UsageError(fmt::format("--stack-min-bytes expects a byte count (4096, 1MiB, 2GB), got '{}'", v));
      }
      env.emplace_back("CUPROBE_STACK_MIN_BYTES", std::to_string(bytes));
    } else if (a == "--fault") {
      fault_rules.push_back(value(a));
    } else if (a == "--faults") {
      std::string path = value(a);
      std::ifstream in(path);
      if (!in) throw UsageError(fmt::format("--faults {}: cannot read it: {}", path, std::strerror(errno)));
      nlohmann::json doc;
      try {
        doc = nlohmann::json::parse(in);
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("--faults {}: not JSON: {}", path, e.what()));
      }
      try {
        faults::FileRules fr = faults::rules_from_json(doc, path);
        fault_rules.insert(fault_rules.end(), fr.rules.begin(), fr.rules.end());
        if (!fr.mem_cap.empty()) mem_cap = fr.mem_cap;
      } catch (const faults::PlanError& e) {
        throw UsageError(e.what());
      }
    } else if (a == "--mem-cap") {
      mem_cap = value(a);
    } else if (a == "--replay-faults") {
      replay_from = value(a);
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
      env.emplace_back("CUPROBE_QUIET", "1");
    } else {
      throw UsageError(fmt::format("unknown option '{}'", a));
    }
  }
  if (i >= args.size()) throw UsageError("no command to run; usage: cuprobe record [options] -- COMMAND [ARGS...]");
  std::vector<std::string> command(args.begin() + long(i), args.end());

  // The fault plan is checked with the shim's own parser before anything runs.
  try {
    if (!replay_from.empty()) {
      faults::Replay rp = faults::replay_from_trace(replay_from);
      replay_rules = rp.rules;
      if (mem_cap.empty()) mem_cap = rp.mem_cap;
      if (!quiet) {
        fmt::print(stderr, "cuprobe: replaying {} injected call{} from {}\n", rp.injected, rp.injected == 1 ? "" : "s",
                   replay_from);
        for (const auto& n : rp.notes) fmt::print(stderr, "cuprobe: note: {}\n", n);
      }
    }
    std::vector<std::string> all = replay_rules;
    all.insert(all.end(), fault_rules.begin(), fault_rules.end());
    if (!all.empty()) {
      env.emplace_back("CUPROBE_FAULTS", faults::check_plan(all));
    } else if (const char* inherited = std::getenv("CUPROBE_FAULTS"); inherited != nullptr && *inherited != 0) {
      faults::check_plan({inherited});
    }
    if (!mem_cap.empty()) {
      faults::check_mem_cap(mem_cap);
      env.emplace_back("CUPROBE_MEM_CAP", mem_cap);
    } else if (const char* inherited = std::getenv("CUPROBE_MEM_CAP"); inherited != nullptr && *inherited != 0) {
      faults::check_mem_cap(inherited);
    }
  } catch (const faults::PlanError& e) {
    fmt::print(stderr, "cuprobe record: {}\ncuprobe record: the command was not started; see cuprobe record --help\n",
               e.what());
    return kExitUsage;
  }

  std::string shim = shim_path();
  if (access(shim.c_str(), R_OK) != 0) {
    fmt::print(stderr, "cuprobe record: the shim {} is missing or unreadable ({}); reinstall cuprobe or set CUPROBE_SHIM\n",
               shim, std::strerror(errno));
    return kExitUsage;
  }
  std::string dir = out.empty() ? default_run_dir() : fs::absolute(out).lexically_normal().string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    fmt::print(stderr, "cuprobe record: cannot create run directory {}: {}\n", dir, ec ? ec.message() : "not a directory");
    return kExitUsage;
  }
  if (!append && has_traces(dir)) {
    fmt::print(stderr, "cuprobe record: {} already holds traces of an earlier run; choose another -o DIR, remove "
                       "them, or pass --append to add this run's processes to them\n", dir);
    return kExitUsage;
  }

  std::string preload = shim;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != 0) {
    std::string existing = old;
    preload = existing.find(shim) != std::string::npos ? existing : existing + ":" + shim;
  }
  env.emplace_back("LD_PRELOAD", preload);
  env.emplace_back("CUPROBE_OUT", dir);

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<char*> argv;
  for (auto& s : command) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    close(pipefd[0]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execvp(argv[0], argv.data());
    int err = errno;
    (void)!write(pipefd[1], &err, sizeof err);
    _exit(127);
  }
  close(pipefd[1]);
  g_child = pid;
  struct sigaction sa {};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);

  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(pipefd[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == sizeof exec_errno) {
    fmt::print(stderr, "cuprobe record: cannot run '{}': {}\n", command[0], std::strerror(exec_errno));
    std::error_code ignore;
    fs::remove(dir, ignore);  // only removes it when empty
    return exec_errno == ENOENT ? 127 : 126;
  }
  int code = 0;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    code = 128 + WTERMSIG(status);
    if (!quiet) fmt::print(stderr, "cuprobe: {} was killed by {}\n", command[0], signal_name(WTERMSIG(status)));
  }
  if (!quiet) report(dir);
  return code;
}

}  // namespace cuprobe::cli
