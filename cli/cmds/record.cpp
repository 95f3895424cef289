// `cuprobe record`: runs a command with libcuprobe.so preloaded and the run directory set, passes
// its exit status through, and says where the trace is and whether anything went wrong.
//
// The environment it sets (LD_PRELOAD, CUPROBE_OUT, CUPROBE_*) is inherited by every child and
// exec'd program, so torchrun workers, multiprocessing and DataLoader workers are traced too.
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bytes_text.h"
#include "cli.h"
#include "cmds/output_file.h"
#include "env_vars.h"
#include "safe_files.h"
#include "fault_plan.h"
#include "faults/plan_builder.h"
#include "keep_spec.h"
#include "trace/reader.h"

namespace cuprobe::cli {

namespace fs = std::filesystem;

namespace {

// A format string: the defaults and the list of variables come from common/env_vars.h (help_text).
constexpr const char* kHelp = R"(Usage: cuprobe record [options] [--] COMMAND [ARGS...]

Runs COMMAND with the cuprobe shim preloaded. Every process of the job that makes a CUDA
runtime or cuDNN call writes one trace file into the run directory; children and exec'd
programs inherit the setup. COMMAND's exit status is passed through (128+N when it was killed
by signal N), also when nothing was traced: then a line on stderr says why ("cuprobe: no trace
in DIR: ..."), unless --quiet.

Options:
  -o, --output DIR    run directory (default: ./cuprobe-YYYYMMDD-HHMMSS in the current directory);
                      created with mode 0700 if missing; refused if it already holds traces (see
                      --append), if it is not a directory of yours, or if others can write into it
                      (group or world write permission, sticky or not): they could replace a trace
                      or add one of their own
      --append        allow a run directory that already holds traces
      --launch-events record every kernel launch as an event (default: counted per thread and
                      device, which costs a few nanoseconds per launch)
      --max-mb N      per-process trace size limit in MiB (default {max_mb}); what happens when a
                      trace gets there is --keep's choice
      --keep WHAT     what a long job's trace keeps (docs/flight-recorder.md): auto (default:
                      every event up to three quarters of --max-mb, then a flight recorder over
                      the last quarter), last:SIZE (a flight recorder from the start: the last
                      SIZE of routine calls, such as last:512MiB), or all (every event up to the
                      limit, none after it). The flight recorder overwrites the oldest routine
                      calls (executions, copies, synchronizations) and never searches, plan
                      selections, failures, faults, allocations, problems or stacks
      --delay S       record routine calls only from S seconds after each process starts
                      (searches, failures and allocations are recorded all along)
      --duration S    ... and only for S seconds (with or without --delay)
      --window-nvtx NAME
                      record routine calls only while an NVTX range named NAME is open (the job
                      pushes it: torch.cuda.nvtx.range_push/range, nvtxRangePushA); the shim
                      becomes the job's NVTX tool (NVTX_INJECTION64_PATH), so not with Nsight
      --clock KIND    timestamp source: auto (default; the invariant TSC when there is one) or
                      monotonic (CLOCK_MONOTONIC for every timestamp)
      --stacks MODE   which calls carry their call stack (native, and the Python lines when
                      the calling thread holds the GIL): off, errors (failed and injected calls),
                      alloc (default: errors, device allocations of --stack-min-bytes or more, and
                      the start of each cuDNN plan selection), all (every recorded call)
      --stack-depth N native frames kept per stack (default {depth}, at most {depth_max})
      --stack-min-bytes BYTES
                      allocations that get a stack in alloc mode (default 1MiB)
      --alerts WHERE  live alerts while COMMAND runs (docs/alerts.md): on (default; one line on
                      standard error for an out-of-memory failure, an injected fault, or new cuDNN
                      problems that keep arriving 20 s and more into the job), off, or a FILE to
                      append them to; rate-limited, each names rank, pid and host
  -q, --quiet         print nothing besides the command's own output (alerts aside)
  -h, --help          this text

Fault mode (docs/faults.md): make chosen calls fail on purpose, before the real call runs.
      --fault SPEC    a rule: CALLS:ERROR[,KEY=VALUE...]; repeatable, rules are tried in order
                      and the first that fires replaces the call. Examples:
                        alloc:OOM,nth=3                   the 3rd device allocation fails
                        cudnn-execute:NOT_SUPPORTED,problem=conv_fwd x[64,first=2
                        cudaMalloc:OOM,size>=1GiB,p=0.1,seed=7
                        cudnn-finalize:NOT_SUPPORTED,engine=0,max=5
                      CALLS: alloc, host-alloc, memcpy, sync, launch, cudnn-create,
                      cudnn-execute, cudnn-finalize, cudnn-find, cudnn-legacy-exec, or API
                      names joined by |.
                      ERROR: OOM, NOT_SUPPORTED, NOT_SUPPORTED_SHAPE, NOT_SUPPORTED_LAYOUT,
                      BAD_PARAM, INTERNAL_ERROR, EXECUTION_FAILED, NOT_INITIALIZED, any name
                      of cudaError_t, CUresult, cudnnStatus_t or ncclResult_t the calls can
                      return (cudaErrorIllegalAddress, ncclSystemError, ...), a number, or
                      DELAY (with delay=TIME: the call waits, then runs). sticky: the device's
                      context stays failed after the rule fires. rank=random picks one rank.
                      When: nth=N every=K first=N after=N at=N+N... p=P seed=S max=N.
                      Which: size>=BYTES problem=TEXT|0xHASH problem~REGEX engine=N device=N
                      rank=N|random pid=N comm=NAME comm-size=N (NCCL: ranks in the call's
                      communicator) from=TIME until=TIME scope=process|thread name=ID
                      delay=TIME sticky
      --faults FILE   rules from a JSON file: {{"rules": [...], "mem_cap": "8GiB"}}
      --mem-cap CAP   device allocations fail with out-of-memory once the bytes live through
                      cuprobe's hooks would exceed CAP, and cudaMemGetInfo reports within it:
                      8GiB, 25% (of each device), or per device 0=8GiB,1=16GiB
      --replay-faults TRACE
                      inject exactly the faults recorded in an earlier run (directory or file)
      --pin-plans FILE
                      replay the cuDNN plans of a plan file (cuprobe plans export): each
                      selection of a problem in FILE ends on its plan after one candidate, so
                      cudnn.benchmark does not search again and every rank runs the same
                      plans; problems not in FILE, other GPUs and other cuDNN versions are
                      selected as usual (docs/plan-pinning.md)
      --pin-plans-learn
                      after COMMAND, add the plans it chose for problems not in FILE to FILE
                      (created when missing; plans the search budget chose are marked heuristic)
      --search-budget PCT
                      keep cudnn.benchmark's searches within PCT of the job's time (5 or 5%):
                      once a layer is asked for a second input shape, a new problem whose search
                      would take the searches past PCT of the time since the first selection
                      gets cuDNN's heuristic choice instead (one candidate, no timing); with
                      --pin-plans, pinned problems come first (docs/search-budget.md)
A malformed plan stops here, before COMMAND starts, with what is wrong in it.

Before COMMAND starts, record also stops (exit status 2) on a CUPROBE_* variable in its
environment whose value the shim would not take (CUPROBE_MAX_MB=abc, CUPROBE_STACK_DEPTH=0;
under plain LD_PRELOAD the shim warns once and uses the default), and on a shim path with a
space or colon, which LD_PRELOAD cannot carry. It warns, and runs COMMAND all the same, when
the loader will not preload the shim into it: a setuid or setgid program (or one with file
capabilities), a statically linked one, or one started through sudo, su, doas, pkexec,
runuser or env -i, which clear the environment. docs/commands/record.md has the details.

{environment}
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

// ---- The shim's variables ------------------------------------------------------------------
// What the shim takes for each CUPROBE_* variable it reads is the variable's entry in
// common/env_vars.h, checked with the same env::value_ok as the shim does. A value the shim
// would not take stops record before the job starts, whether an option or the environment set
// it; under plain LD_PRELOAD the shim warns once and uses the default.

// The value of an option that sets a variable to the option's value as given.
std::string word_option(env::Id id, const std::string& v) {
  const env::Var& var = env::var(id);
  if (!env::value_ok(var, v.c_str())) {
    throw UsageError(fmt::format("{} expects {}, got '{}'", var.option, var.expected, v));
  }
  return v;
}

// The value of an option that sets a number variable: a count within the variable's range.
uint64_t number_option(env::Id id, const std::string& v) {
  const env::Var& var = env::var(id);
  unsigned long long n = parse_count(var.option, v);
  if (n < var.min || n > var.max) throw UsageError(fmt::format("{} expects {}, got {}", var.option, var.expected, v));
  return n;
}

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The value COMMAND will see: what record sets, else what it inherits; "" when neither.
std::string job_env(const EnvList& env, const std::string& name) {
  for (auto it = env.rbegin(); it != env.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  const char* v = std::getenv(name.c_str());
  return v ? v : "";
}

// "" when every inherited CUPROBE_* value is one the shim takes; otherwise what is wrong.
// Values record sets itself come from options that were checked when they were read. Variables
// of free text are checked by their own readers (the fault plan, the memory cap, the plan file
// and the NVTX window in check_before_start; any run directory is recreated as CUPROBE_OUT).
std::string check_inherited_variables(const EnvList& env) {
  for (const env::Var& var : env::kVars) {
    if (var.kind == env::Kind::kText) continue;
    bool set_by_option = false;
    for (const auto& kv : env) set_by_option |= kv.first == var.name;
    const char* v = std::getenv(var.name);
    if (set_by_option || v == nullptr || *v == 0 || env::value_ok(var, v)) continue;
    return fmt::format("{}={} in the environment is not {}; correct or unset it", var.name, v, var.expected);
  }
  return "";
}

// `text` broken into lines of at most `width` columns at spaces.
std::string wrap(const std::string& text, size_t width) {
  std::string out, line;
  size_t p = 0;
  while (p < text.size()) {
    size_t e = text.find(' ', p);
    if (e == std::string::npos) e = text.size();
    std::string word = text.substr(p, e - p);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    p = e + 1;
  }
  return out + line;
}

std::string help_text() {
  using env::Id;
  static_assert(env::var(Id::kStackMinBytes).def == 1u << 20, "--stack-min-bytes's help says 1MiB");
  std::vector<std::string> set;
  for (const env::Var& var : env::kVars) {
    if (*var.option && var.id != Id::kOut) set.push_back(var.name);
  }
  std::string environment = wrap(
      fmt::format("Environment set for COMMAND: LD_PRELOAD (the shim appended), CUPROBE_OUT (absolute run directory), "
                  "and {} when the options ask (docs/commands/record.md lists every variable). Under plain "
                  "LD_PRELOAD, set CUPROBE_FAULTS (rules separated by ';') and CUPROBE_MEM_CAP yourself; a malformed "
                  "plan is then reported on stderr and nothing is injected. Set CUPROBE_SHIM to use a shim other "
                  "than the one installed beside this command.",
                  fmt::join(set, ", ")),
      96);
  return fmt::format(fmt::runtime(kHelp), fmt::arg("max_mb", env::var(Id::kMaxMb).def),
                     fmt::arg("depth", env::var(Id::kStackDepth).def),
                     fmt::arg("depth_max", env::var(Id::kStackDepth).max), fmt::arg("environment", environment));
}

// ---- The run directory ---------------------------------------------------------------------

// ---- Whether LD_PRELOAD will reach the job -------------------------------------------------

// The file execvp would run for `name`: searched in PATH unless it holds a slash; "" if none.
std::string resolve_command(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string path;
  if (const char* p = std::getenv("PATH"); p != nullptr) {
    path = p;
  } else {
    char buf[256];
    size_t n = confstr(_CS_PATH, buf, sizeof buf);
    path = n > 0 && n <= sizeof buf ? std::string(buf) : "/bin:/usr/bin";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

enum class Linkage { kUnknown, kDynamic, kStatic };

template <typename Ehdr, typename Phdr>
Linkage elf_linkage(int fd) {
  Ehdr eh{};
  if (pread(fd, &eh, sizeof eh, 0) != ssize_t(sizeof eh)) return Linkage::kUnknown;
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) return Linkage::kUnknown;
  if (eh.e_phentsize != sizeof(Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) return Linkage::kUnknown;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Phdr ph{};
    if (pread(fd, &ph, sizeof ph, off_t(eh.e_phoff + uint64_t(i) * sizeof ph)) != ssize_t(sizeof ph)) {
      return Linkage::kUnknown;
    }
    if (ph.p_type == PT_INTERP) return Linkage::kDynamic;
  }
  return Linkage::kStatic;  // no program interpreter: the kernel starts it directly, ld.so never runs
}

// Whether `path` is a dynamically or statically linked ELF executable; for a script (#!), the
// interpreter's path in `interpreter` (and, for "#!/usr/bin/env NAME", NAME resolved).
Linkage linkage_of(const std::string& path, std::string* interpreter) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Linkage::kUnknown;
  char head[256] = {};
  ssize_t n = pread(fd, head, sizeof head - 1, 0);
  Linkage result = Linkage::kUnknown;
  if (n >= EI_NIDENT && std::memcmp(head, ELFMAG, SELFMAG) == 0) {
    result = head[EI_CLASS] == ELFCLASS64   ? elf_linkage<Elf64_Ehdr, Elf64_Phdr>(fd)
             : head[EI_CLASS] == ELFCLASS32 ? elf_linkage<Elf32_Ehdr, Elf32_Phdr>(fd)
                                            : Linkage::kUnknown;
  } else if (n > 2 && head[0] == '#' && head[1] == '!' && interpreter != nullptr) {
    std::string line(head + 2, size_t(n - 2));
    line = line.substr(0, line.find('\n'));
    std::vector<std::string> words;
    size_t p = 0;
    while ((p = line.find_first_not_of(" \t", p)) != std::string::npos) {
      size_t e = line.find_first_of(" \t", p);
      words.push_back(line.substr(p, e == std::string::npos ? std::string::npos : e - p));
      p = e;
    }
    if (!words.empty()) {
      *interpreter = words[0];
      if (fs::path(words[0]).filename() == "env") {
        for (size_t i = 1; i < words.size(); ++i) {
          if (words[i][0] == '-') continue;
          *interpreter = resolve_command(words[i]);
          break;
        }
      }
    }
  }
  close(fd);
  return result;
}

// "setuid nobody (uid 65534)" when running `path` changes this process's user or group, which
// makes the loader ignore (and drop) LD_PRELOAD; "" when it does not.
std::string privilege_change(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  struct statvfs vfs {};
  if (statvfs(path.c_str(), &vfs) == 0 && (vfs.f_flag & ST_NOSUID)) return "";  // the bits are ignored there
  if ((st.st_mode & S_ISUID) && st.st_uid != getuid()) return "setuid " + user_name(st.st_uid);
  if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid()) {
    std::string group = account_name("/etc/group", st.st_gid);
    return group.empty() ? fmt::format("setgid gid {}", st.st_gid) : fmt::format("setgid {} (gid {})", group, st.st_gid);
  }
  if (getuid() != 0 && getxattr(path.c_str(), "security.capability", nullptr, 0) > 0) return "given file capabilities";
  return "";
}

// Why no process of COMMAND will load the shim, as far as can be told before it runs; "" when
// nothing speaks against it. Looks through `env [-i] [NAME=VALUE...]` and #! interpreters.
std::string preload_obstacle(const std::vector<std::string>& command) {
  size_t at = 0;
  for (int hops = 0; hops < 4 && at < command.size(); ++hops) {
    std::string name = fs::path(command[at]).filename().string();
    if (name == "sudo" || name == "su" || name == "doas" || name == "pkexec" || name == "runuser") {
      return fmt::format("{} starts what it runs with a new environment, without LD_PRELOAD and CUPROBE_OUT; "
                         "run cuprobe inside it instead ({} cuprobe record ... -- COMMAND)",
                         name, name);
    }
    std::string path = resolve_command(command[at]);
    if (path.empty()) return "";  // execvp will say so
    if (name == "env") {
      size_t i = at + 1;
      for (; i < command.size(); ++i) {
        const std::string& a = command[i];
        if (a == "-" || a == "-i" || a == "--ignore-environment" ||
            (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find('i') != std::string::npos &&
             a.find_first_of("uCS") > a.find('i'))) {
          return "env -i starts the command with an empty environment, without LD_PRELOAD and CUPROBE_OUT";
        }
        if (a == "--") {
          ++i;
          break;
        }
        if (a == "-u" || a == "-C" || a == "-S" || a == "--unset" || a == "--chdir" || a == "--split-string") {
          ++i;
          continue;
        }
        if (a[0] == '-' || a.find('=') != std::string::npos) continue;
        break;
      }
      at = i;
      continue;
    }
    if (std::string how = privilege_change(path); !how.empty()) {
      return fmt::format("{} is {}: the dynamic loader ignores LD_PRELOAD for programs that change user or group, "
                         "and drops it for everything they run",
                         path, how);
    }
    std::string interpreter;
    Linkage linkage = linkage_of(path, &interpreter);
    if (linkage == Linkage::kStatic) {
      return fmt::format("{} is statically linked: no dynamic loader runs for it, so LD_PRELOAD has no effect on it "
                         "(dynamically linked programs it starts are still traced)",
                         path);
    }
    if (interpreter.empty()) return "";
    if (std::string how = privilege_change(interpreter); !how.empty()) {
      return fmt::format("{}'s interpreter {} is {}: the dynamic loader ignores LD_PRELOAD for programs that change "
                         "user or group", path, interpreter, how);
    }
    if (linkage_of(interpreter, nullptr) == Linkage::kStatic) {
      return fmt::format("{}'s interpreter {} is statically linked: LD_PRELOAD has no effect on it", path, interpreter);
    }
    return "";
  }
  return "";
}

// A fault plan file, read without ever blocking for good: a FIFO nobody writes to is refused
// (a pipe from process substitution, --faults <(...), is read as its writer writes it, for at
// most 30 s), and at most 16 MiB are read.
std::string read_plan_file(const std::string& path) {
  constexpr size_t kMax = 16u << 20;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw UsageError(fmt::format("--faults {}: cannot read it: {}", path, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
    close(fd);
    throw UsageError(fmt::format("--faults {}: not a regular file or a pipe", path));
  }
  std::string text;
  char buf[65536];
  timespec start {};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, size_t(n));
      if (text.size() > kMax) {
        close(fd);
        throw UsageError(fmt::format("--faults {}: larger than 16 MiB; a fault plan is a few rules", path));
      }
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      int err = errno;
      close(fd);
      throw UsageError(fmt::format("--faults {}: cannot read it: {}", path, std::strerror(err)));
    }
    timespec now {};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= 30) {
      close(fd);
      throw UsageError(fmt::format("--faults {}: the pipe was not closed within 30 s", path));
    }
    usleep(10000);
  }
  close(fd);
  if (text.empty() && S_ISFIFO(st.st_mode)) {
    throw UsageError(fmt::format("--faults {}: a FIFO with nothing written to it; give the plan as a file", path));
  }
  return text;
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

// Why no process wrote a trace, as well as can be told afterwards (`changed`: what is wrong with
// the run directory now). The shim leaves nothing behind where it wrote no trace, so a program
// that never used CUDA and one that LD_PRELOAD never reached look alike; the message names both.
std::string no_trace_reason(const std::string& changed, const EnvList& env, const std::string& obstacle) {
  if (!changed.empty()) {
    return fmt::format("the run directory changed while the command ran: {}. The shim refuses such a directory "
                       "(its own messages above say so)", changed);
  }
  bool disabled = false;
  if (std::string v = job_env(env, "CUPROBE_DISABLE"); env::parse_flag(v.c_str(), &disabled) && disabled) {
    return fmt::format("CUPROBE_DISABLE={} is set: the shim was loaded but recorded nothing", v);
  }
  if (!obstacle.empty()) return obstacle;
  return "no process of the command made a CUDA or cuDNN call through the shim: either none used CUDA (or "
         "cudart was linked statically, which cannot be interposed), or LD_PRELOAD did not reach the processes that "
         "did (a launcher or script that clears the environment drops it); a process whose trace could not be "
         "written said why above ('cuprobe: ...')";
}

// What the run's traces say about themselves, summed over its processes.
struct RunTotals {
  uint64_t events = 0;
  uint64_t bytes = 0;
  uint64_t dropped = 0;
  uint64_t kept_dropped = 0;
  uint64_t overwritten = 0;
  int ringed = 0;
  uint64_t missing = 0;
  uint64_t rejected = 0;
  int unfinished = 0;
  std::map<std::string, uint64_t> injected;  // by fault rule: calls failed on purpose
  std::map<std::string, uint64_t> delayed;   // by DELAY rule: calls held, then run as usual
};

// Whether a rule's text (as the trace keeps it) is a DELAY rule: its calls waited and then ran;
// none failed.
bool delay_only_rule(const std::string& text) {
  auto plan = std::make_unique<faults::Plan>();
  char err[256];
  if (!faults::parse_plan(text.c_str(), plan.get(), err, sizeof err)) return false;
  bool delay = plan->n == 1 && plan->rules[0].delay_only;
  faults::free_plan(plan.get());
  return delay;
}

RunTotals sum_traces(const std::vector<std::string>& files) {
  RunTotals s;
  for (const auto& path : files) {
    std::error_code ec;
    s.bytes += fs::file_size(path, ec);
    auto t = reader::TraceFile::open(path);
    if (!t) {
      fmt::print(stderr, "cuprobe: {}\n", t.error().message);
      continue;
    }
    s.events += (*t)->call_records();
    s.dropped += (*t)->stat(trace::kStatDroppedEvents);
    s.kept_dropped += (*t)->stat(trace::kStatKeptDropped);
    s.overwritten += (*t)->coverage().overwritten_calls;
    if ((*t)->coverage().overwritten()) ++s.ringed;
    s.missing += (*t)->stat(trace::kStatMissingSymbols);
    s.rejected += (*t)->stat(trace::kStatFaultPlanRejected);
    for (const auto& r : (*t)->fault_rules()) {
      if (!r.is_mem_cap() && r.injected && delay_only_rule(r.text)) {
        s.delayed[r.name] += r.injected;
      } else {
        s.injected[r.name] += r.injected;
      }
    }
    if ((*t)->state() == trace::FileState::kRecording) ++s.unfinished;
  }
  return s;
}

// The lines after "trace in DIR": what was lost, overwritten, refused or injected.
void report_totals(const RunTotals& s) {
  if (s.overwritten) {
    fmt::print(stderr, "cuprobe: the flight recorder of {} process{} kept the last routine calls and overwrote {} older "
                       "ones; searches, failures and allocations are all there (docs/flight-recorder.md)\n",
               s.ringed, s.ringed == 1 ? "" : "es", s.overwritten);
  }
  if (s.dropped) fmt::print(stderr, "cuprobe: warning: {} events were dropped (trace size limit or full disk)\n", s.dropped);
  if (s.kept_dropped) {
    fmt::print(stderr, "cuprobe: warning: {} searches, failures or allocations were dropped: the trace size limit was "
                       "reached even with the flight recorder's ring at its smallest; raise --max-mb\n", s.kept_dropped);
  }
  if (s.missing) fmt::print(stderr, "cuprobe: warning: {} calls found no real function to forward to\n", s.missing);
  if (s.rejected) fmt::print(stderr, "cuprobe: warning: {} process{} refused the fault plan; nothing was injected there\n",
                             s.rejected, s.rejected == 1 ? "" : "es");
  auto per_rule = [](const std::map<std::string, uint64_t>& by_rule, uint64_t* total) {
    std::string text;
    for (const auto& [name, n] : by_rule) {
      *total += n;
      text += fmt::format("{}{} {}", text.empty() ? "" : ", ", name, n);
    }
    return text;
  };
  if (!s.injected.empty()) {
    uint64_t total = 0;
    std::string text = per_rule(s.injected, &total);
    fmt::print(stderr, "cuprobe: fault mode: {} call{} failed on purpose ({})\n", total, total == 1 ? "" : "s", text);
  }
  if (!s.delayed.empty()) {
    uint64_t total = 0;
    std::string text = per_rule(s.delayed, &total);
    fmt::print(stderr, "cuprobe: fault mode: {} call{} held on purpose, then run as usual ({})\n", total,
               total == 1 ? "" : "s", text);
  }
  if (s.unfinished) {
    fmt::print(stderr, "cuprobe: note: {} process{} ended without a clean exit (killed, _exit, or still running); "
                       "their traces are complete up to their last event\n", s.unfinished, s.unfinished == 1 ? "" : "es");
  }
}

void report(const std::string& dir, const EnvList& env, const std::string& obstacle) {
  bool created = false;
  std::string changed = run_dir_problem(dir, false, &created);
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || !has_traces(dir)) {
    fmt::print(stderr, "cuprobe: no trace in {}: {}\n", dir, no_trace_reason(changed, env, obstacle));
    return;
  }
  if (!changed.empty()) {
    fmt::print(stderr, "cuprobe: warning: the run directory changed while the command ran: {}; not every trace in it "
                       "need be this run's\n", changed);
  }
  auto files = reader::find_trace_files(dir);
  if (!files) {
    fmt::print(stderr, "cuprobe: {}\n", files.error().message);
    return;
  }
  RunTotals totals = sum_traces(*files);
  fmt::print(stderr, "cuprobe: trace in {} ({} process{}, {} events, {})\n", dir, files->size(),
             files->size() == 1 ? "" : "es", totals.events, human_bytes(totals.bytes));
  report_totals(totals);
  fmt::print(stderr, "cuprobe: next: cuprobe analyze {}   (or cuprobe dump {} for every call)\n", dir, dir);
}

// ---- cmd_record's steps, in the order it takes them -------------------------------------------

// What the command line asks of record.
struct Request {
  std::string out;
  bool append = false;
  bool quiet = false;
  EnvList env;  // what record sets for COMMAND, in the order the options set it
  std::vector<std::string> fault_rules;
  std::string mem_cap;
  std::string replay_from;
  std::string pin_plans;
  bool pin_learn = false;
  std::vector<std::string> command;
};

// --alerts: on, off, or a file, opened as the shim will open it (common/safe_files.h), so that a
// link, a FIFO or a shared directory stops here rather than sending the alerts to standard error
// later.
std::string alerts_option(const std::string& v) {
  if (v == "on" || v == "off") return v;
  if (v.empty()) throw UsageError("--alerts expects on, off or a file");
  std::string file = fs::absolute(v).string();
  files::Why why;
  int fd = files::open_append(file.c_str(), &why);
  if (fd < 0) throw UsageError(fmt::format("--alerts {}: {}", v, why.text));
  close(fd);
  return "file:" + file;
}

// The NVTX tool the environment names already, "" when none: a capture window needs the shim to
// be the job's tool.
std::string other_nvtx_tool() {
  const char* other = std::getenv("NVTX_INJECTION64_PATH");
  return other != nullptr ? other : "";
}

// --window-nvtx NAME: the shim must be the job's NVTX tool.
std::string window_nvtx_option(const std::string& v) {
  if (v.empty()) throw UsageError("--window-nvtx expects the name of an NVTX range");
  if (std::string other = other_nvtx_tool(); !other.empty()) {
    throw UsageError(fmt::format("--window-nvtx needs cuprobe as the job's NVTX tool, but NVTX_INJECTION64_PATH "
                                 "names {}; unset it (or leave out --window-nvtx)",
                                 other));
  }
  return v;
}

// The options that set one of the shim's variables (common/env_vars.h), each checked by the
// variable's entry as it is read. The shim's bounds are refused here rather than ignored there.
void add_variable_options(OptionParser& options, Request& r) {
  using env::Id;
  auto set = [&r](Id id, std::string value) { r.env.emplace_back(env::var(id).name, std::move(value)); };
  auto number = [&](Id id) {
    options.value(env::var(id).option, [set, id](const std::string& v) { set(id, std::to_string(number_option(id, v))); });
  };
  auto word = [&](Id id) {
    options.value(env::var(id).option, [set, id](const std::string& v) { set(id, word_option(id, v)); });
  };
  options.flag("--launch-events", [set] { set(Id::kLaunchEvents, "1"); });
  number(Id::kMaxMb);
  word(Id::kKeep);
  number(Id::kDelayS);
  number(Id::kDurationS);
  options.value("--window-nvtx", [set](const std::string& v) { set(Id::kWindowNvtx, window_nvtx_option(v)); });
  options.value("--clock", [set](const std::string& v) {
    if (word_option(Id::kClock, v) != "auto") set(Id::kClock, v);
  });
  word(Id::kStacks);
  number(Id::kStackDepth);
  options.value("--stack-min-bytes", [set](const std::string& v) {
    uint64_t bytes = 0;
    if (!faults::parse_bytes(v.c_str(), v.size(), &bytes)) {
      throw UsageError(fmt::format("--stack-min-bytes expects a byte count (4096, 1MiB, 2GB), got '{}'", v));
    }
    set(Id::kStackMinBytes, std::to_string(bytes));
  });
  options.value("--alerts", [set](const std::string& v) { set(Id::kAlerts, alerts_option(v)); });
  word(Id::kSearchBudget);
}

// --faults FILE: its rules join --fault's, its memory cap replaces --mem-cap's.
void add_fault_file(const std::string& path, Request& r) {
  std::string text = read_plan_file(path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--faults {}: not JSON: {}", path, e.what()));
  }
  try {
    faults::FileRules fr = faults::rules_from_json(doc, path);
    r.fault_rules.insert(r.fault_rules.end(), fr.rules.begin(), fr.rules.end());
    if (!fr.mem_cap.empty()) r.mem_cap = fr.mem_cap;
  } catch (const faults::PlanError& e) {
    throw UsageError(e.what());
  }
}

// The command line, or false when it asked for --help (printed).
bool parse_request(const Args& args, Request* r) {
  OptionParser options(help_text());
  options.stop_at_first_operand();
  options.value("-o,--output", [r](const std::string& v) { r->out = v; });
  options.flag("--append", [r] { r->append = true; });
  add_variable_options(options, *r);
  options.value("--fault", [r](const std::string& v) { r->fault_rules.push_back(v); });
  options.value("--faults", [r](const std::string& path) { add_fault_file(path, *r); });
  options.value("--mem-cap", [r](const std::string& v) { r->mem_cap = v; });
  options.value("--replay-faults", [r](const std::string& v) { r->replay_from = v; });
  options.value("--pin-plans", [r](const std::string& v) { r->pin_plans = v; });
  options.flag("--pin-plans-learn", [r] { r->pin_learn = true; });
  options.flag("-q,--quiet", [r] {
    r->quiet = true;
    r->env.emplace_back(env::var(env::Id::kQuiet).name, "1");
  });
  // COMMAND starts at the first argument that is not an option (or after "--"); it and its
  // arguments are passed on untouched, options of its own included.
  if (!options.parse(args, &r->command)) return false;
  if (r->command.empty()) throw UsageError("no command to run; usage: cuprobe record [options] -- COMMAND [ARGS...]");
  return true;
}

// The fault plan (replayed faults first, then --fault and --faults) and the memory cap, checked
// with the shim's own parser before anything runs; inherited ones are checked too.
void check_fault_plan(Request& r) {
  std::vector<std::string> all;
  if (!r.replay_from.empty()) {
    faults::Replay rp = faults::replay_from_trace(r.replay_from);
    all = rp.rules;
    if (r.mem_cap.empty()) r.mem_cap = rp.mem_cap;
    if (!r.quiet) {
      fmt::print(stderr, "cuprobe: replaying {} injected call{} from {}\n", rp.injected, rp.injected == 1 ? "" : "s",
                 r.replay_from);
      for (const auto& n : rp.notes) fmt::print(stderr, "cuprobe: note: {}\n", n);
    }
  }
  all.insert(all.end(), r.fault_rules.begin(), r.fault_rules.end());
  if (!all.empty()) {
    r.env.emplace_back("CUPROBE_FAULTS", faults::check_plan(all));
  } else if (const char* inherited = std::getenv("CUPROBE_FAULTS"); inherited != nullptr && *inherited != 0) {
    faults::check_plan({inherited});
  }
  if (!r.mem_cap.empty()) {
    faults::check_mem_cap(r.mem_cap);
    r.env.emplace_back("CUPROBE_MEM_CAP", r.mem_cap);
  } else if (const char* inherited = std::getenv("CUPROBE_MEM_CAP"); inherited != nullptr && *inherited != 0) {
    faults::check_mem_cap(inherited);
  }
}

// The plan file is read here, so that a wrong one stops the job before it starts; with
// --pin-plans-learn it may not exist yet (this run's plans start it).
void check_pin_plans(Request& r) {
  if (r.pin_learn && r.pin_plans.empty()) throw UsageError("--pin-plans-learn needs --pin-plans FILE (the file to add to)");
  if (!r.pin_plans.empty()) {
    std::error_code ec;
    std::string abs = fs::absolute(r.pin_plans, ec).lexically_normal().string();
    if (fs::exists(abs, ec)) {
      size_t n = plans_count(abs);
      r.env.emplace_back("CUPROBE_PIN_PLANS", abs);
      if (!r.quiet) fmt::print(stderr, "cuprobe: pinning {} cuDNN plan{} from {}\n", n, n == 1 ? "" : "s", r.pin_plans);
    } else if (!r.pin_learn) {
      throw UsageError(fmt::format("--pin-plans {}: no such file (write one with cuprobe plans export RUN, or add "
                                   "--pin-plans-learn to start it with this run)",
                                   r.pin_plans));
    }
    r.pin_plans = abs;
  } else if (const char* inherited = std::getenv("CUPROBE_PIN_PLANS"); inherited != nullptr && *inherited != 0) {
    // Inherited from a launcher script: checked the same way, since the shim would only warn.
    try {
      plans_count(inherited);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("CUPROBE_PIN_PLANS in the environment: {}", e.what()));
    }
  }
}

// A capture window inherited from a launcher script, with another NVTX tool named: refused as
// --window-nvtx is, since every process of the job would say it cannot open the window.
void check_window_nvtx(const EnvList& env) {
  const char* name = env::var(env::Id::kWindowNvtx).name;
  for (const auto& kv : env) {
    if (kv.first == name) return;  // the option, checked as it was read
  }
  const char* inherited = std::getenv(name);
  std::string other = other_nvtx_tool();
  if (inherited == nullptr || *inherited == 0 || other.empty()) return;
  throw UsageError(fmt::format("{}={} in the environment needs cuprobe as the job's NVTX tool, but "
                               "NVTX_INJECTION64_PATH names {}; unset one of them",
                               name, inherited, other));
}

// An alerts file inherited from a launcher script: opened as the shim would open it.
void check_alerts_file(const EnvList& env) {
  if (std::string alerts = job_env(env, "CUPROBE_ALERTS"); alerts.rfind("file:", 0) == 0 && alerts.size() > 5) {
    files::Why why;
    int fd = files::open_append(alerts.c_str() + 5, &why);
    if (fd < 0) throw UsageError(fmt::format("CUPROBE_ALERTS={} in the environment: {}", alerts, why.text));
    close(fd);
  }
}

// The shim's absolute path (a relative path in LD_PRELOAD would be looked up again from every
// process's own working directory); "" after saying why it cannot be preloaded.
std::string checked_shim() {
  std::string shim = fs::absolute(shim_path()).lexically_normal().string();
  if (access(shim.c_str(), R_OK) != 0) {
    fmt::print(stderr, "cuprobe record: the shim {} is missing or unreadable ({}); reinstall cuprobe or set CUPROBE_SHIM\n",
               shim, std::strerror(errno));
    return "";
  }
  // The loader splits LD_PRELOAD at every space and colon and has no way to quote one. A link
  // made behind the user's back would have to outlive every process of the job (and could be
  // left dangling or be replaced), so record refuses and says how to fix it once.
  if (size_t bad = shim.find_first_of(" :"); bad != std::string::npos) {
    fmt::print(stderr, "cuprobe record: the shim's path {} contains a {}, which LD_PRELOAD cannot carry (the dynamic "
                       "loader splits it there); install cuprobe under a path without spaces or colons, or make a "
                       "link to the shim from such a path and name it in CUPROBE_SHIM, for example:\n"
                       "  ln -s '{}' ~/.local/lib/libcuprobe.so && export CUPROBE_SHIM=~/.local/lib/libcuprobe.so\n",
               shim, shim[bad] == ' ' ? "space" : "colon", shim);
    return "";
  }
  return shim;
}

// The run directory, made (0700) when missing; "" after saying why it cannot be used.
std::string open_run_dir(const Request& r, bool* created) {
  std::string dir = r.out.empty() ? default_run_dir() : fs::absolute(r.out).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (std::string problem = run_dir_problem(dir, true, created); !problem.empty()) {
    fmt::print(stderr, "cuprobe record: cannot use run directory {}: {}\ncuprobe record: the command was not started\n",
               dir, problem);
    return "";
  }
  if (!r.append && has_traces(dir)) {
    fmt::print(stderr, "cuprobe record: {} already holds traces of an earlier run; choose another -o DIR, remove "
                       "them, or pass --append to add this run's processes to them\n", dir);
    return "";
  }
  return dir;
}

// LD_PRELOAD for the job: the shim appended to what the environment preloads already (a
// sanitizer runtime must stay first), unless it names this very shim.
std::string preload_with(const std::string& shim) {
  const char* old = std::getenv("LD_PRELOAD");
  if (old == nullptr || *old == 0) return shim;
  std::string existing = old;
  bool present = false;
  for (size_t p = 0; p <= existing.size();) {
    size_t e = existing.find_first_of(" :", p);
    if (e == std::string::npos) e = existing.size();
    present |= existing.compare(p, e - p, shim) == 0 && e - p == shim.size();
    p = e + 1;
  }
  return present ? existing : existing + ":" + shim;
}

// Runs COMMAND with `env` added, forwarding the signals other processes send to record; its wait
// status, or -1 with *exec_errno when it could not be started.
int run_job(const std::vector<std::string>& command, const EnvList& env, int* exec_errno) {
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
  ssize_t n;
  do {
    n = read(pipefd[0], exec_errno, sizeof *exec_errno);
  } while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return n == sizeof *exec_errno ? -1 : status;
}

// What record says after the job and exits with: COMMAND's status (128+N when signal N killed it).
int finish(const Request& r, const std::string& dir, int status, const std::string& obstacle) {
  int code = 0;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    code = 128 + WTERMSIG(status);
    if (!r.quiet) fmt::print(stderr, "cuprobe: {} was killed by {}\n", r.command[0], signal_name(WTERMSIG(status)));
  }
  if (!r.quiet) report(dir, r.env, obstacle);
  if (r.pin_learn) {
    // The run's own selections (of problems not pinned yet) join the file; its pinned ones are
    // left out by export. A run that chose nothing leaves the file as it was.
    if (plans_learn(r.pin_plans, dir) != kExitOk && !r.quiet) {
      fmt::print(stderr, "cuprobe: --pin-plans-learn: nothing added to {}\n", r.pin_plans);
    }
  }
  return code;
}

// Everything checked before the job starts: false after saying what is wrong (exit status 2);
// usage errors are thrown.
bool check_before_start(Request& r) {
  try {
    check_fault_plan(r);
  } catch (const faults::PlanError& e) {
    fmt::print(stderr, "cuprobe record: {}\ncuprobe record: the command was not started; see cuprobe record --help\n",
               e.what());
    return false;
  }
  check_pin_plans(r);
  check_alerts_file(r.env);
  check_window_nvtx(r.env);
  if (std::string bad = check_inherited_variables(r.env); !bad.empty()) {
    fmt::print(stderr, "cuprobe record: {}\ncuprobe record: the command was not started; see cuprobe record --help\n",
               bad);
    return false;
  }
  return true;
}

}  // namespace

int cmd_record(const Args& args) {
  Request r;
  if (!parse_request(args, &r)) return kExitOk;
  if (!check_before_start(r)) return kExitUsage;
  std::string shim = checked_shim();
  if (shim.empty()) return kExitUsage;
  bool created = false;
  std::string dir = open_run_dir(r, &created);
  if (dir.empty()) return kExitUsage;
  r.env.emplace_back("LD_PRELOAD", preload_with(shim));
  r.env.emplace_back("CUPROBE_OUT", dir);

  // Programs the loader will not preload into: said now, so the job can be stopped, and again
  // at the end when no trace came.
  std::string obstacle = preload_obstacle(r.command);
  if (!r.quiet && !obstacle.empty()) fmt::print(stderr, "cuprobe record: warning: {}\n", obstacle);

  int exec_errno = 0;
  int status = run_job(r.command, r.env, &exec_errno);
  if (status < 0) {
    fmt::print(stderr, "cuprobe record: cannot run '{}': {}\n", r.command[0], std::strerror(exec_errno));
    if (created) rmdir(dir.c_str());  // only when empty, and only a directory made here
    return exec_errno == ENOENT ? 127 : 126;
  }
  return finish(r, dir, status, obstacle);
}

}  // namespace cuprobe::cli
