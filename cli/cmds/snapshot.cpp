// `cuprobe snapshot`: a copy of a running job's traces, as they are now, that analyze, report and
// export read while the job goes on (issue 15). A trace file is written so that a copy taken at
// any moment reads like a trace cut short at that moment (each thread's records up to its last
// commit before the copy reached them), so a snapshot is a plain copy, checked by opening it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "cli.h"
#include "cmds/output_file.h"
#include "cuprobe/trace_format.h"
#include "trace/reader.h"

namespace cuprobe::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kHelp = R"HELP(Usage: cuprobe snapshot [-o DIR] RUN_DIR|PID...

Copies the traces of a job, running or not, into DIR as they are at this moment, so that
`cuprobe analyze DIR` (and report, export) reads a fixed picture while the job goes on. RUN_DIR
is a run directory (every *.cuprobe in it: all ranks of a torchrun or Slurm job that share it);
PID is a traced process: its run directory is found from the trace files it has open, or from
its CUPROBE_OUT. Nothing is sent to the job and nothing in it changes: the copy is a read.

Each trace reads like one whose process stopped at the moment the copy reached it (each
thread's events up to its last completed record then; the newest few may be missing), marked
as a snapshot: analyze reports its process as "running (snapshot)", not as one that ended
without a clean exit.

Options:
  -o, --output DIR     where the copies go (a new or empty directory; default: beside the run
                       directory, RUN_DIR-snapshot-YYYYMMDD-HHMMSS)
  -q, --quiet          no summary line
  -h, --help           this text

Exit status: 0 copied, 2 usage error, nothing to copy, or a copy that cannot be read.
)HELP";

// The children of process `pid` (every thread's), from /proc.
std::vector<std::string> children_of(const std::string& pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(fs::path("/proc") / pid / "task", ec)) {
    std::ifstream in(task.path() / "children");
    for (std::string child; in >> child;) out.push_back(child);
  }
  return out;
}

// The run directories process `pid` writes to: the directories of the trace files it has open,
// else its CUPROBE_OUT; for a process that is not traced itself (`cuprobe record`, torchrun, a
// shell), those of its descendants.
std::set<std::string> own_run_dirs(const std::string& pid);
std::set<std::string> run_dirs_of(const std::string& pid) {
  std::error_code ec;
  if (!fs::exists(fs::path("/proc") / pid, ec)) throw UsageError(fmt::format("no process {}", pid));
  std::set<std::string> dirs = own_run_dirs(pid);
  std::vector<std::string> todo = children_of(pid);
  std::set<std::string> seen;
  while (dirs.empty() && !todo.empty() && seen.size() < 4096) {
    std::vector<std::string> next;
    for (const auto& c : todo) {
      if (!seen.insert(c).second) continue;
      for (const auto& d : own_run_dirs(c)) dirs.insert(d);
      for (const auto& g : children_of(c)) next.push_back(g);
    }
    todo = std::move(next);
  }
  if (dirs.empty()) {
    throw UsageError(fmt::format("process {} and its children have no trace open and no CUPROBE_OUT (are they "
                                 "traced, and may this user read /proc/{}?)",
                                 pid, pid));
  }
  return dirs;
}

std::set<std::string> own_run_dirs(const std::string& pid) {
  std::set<std::string> dirs;
  std::error_code ec;
  fs::path fd_dir = fs::path("/proc") / pid / "fd";
  for (const auto& e : fs::directory_iterator(fd_dir, ec)) {
    std::error_code ec2;
    fs::path target = fs::read_symlink(e.path(), ec2);
    if (!ec2 && target.extension() == ".cuprobe") dirs.insert(target.parent_path().string());
  }
  if (!dirs.empty()) return dirs;
  std::ifstream env(fs::path("/proc") / pid / "environ", std::ios::binary);
  std::string var;
  while (std::getline(env, var, '\0')) {
    if (var.rfind("CUPROBE_OUT=", 0) == 0 && var.size() > 12) {
      fs::path out = var.substr(12);
      if (out.is_relative()) out = fs::read_symlink(fs::path("/proc") / pid / "cwd", ec) / out;
      dirs.insert(out.lexically_normal().string());
    }
  }
  return dirs;
}

// A copy of a trace whose process was still recording says so (FileState::kSnapshot): the
// analyzer then reads it as running when copied, not as a process that died without a clean exit.
// The copy keeps what was written: the chunks its header claims (the header page is copied first,
// so a chunk claimed later is one the copy's header never names), not the reserve the running
// process has ahead of them.
void mark_snapshot(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;  // a JSON Lines dump, or unreadable: left as it is
  trace::FileHeader hdr;
  bool trace = ::pread(fd, &hdr, sizeof hdr, 0) == ssize_t(sizeof hdr) &&
               std::memcmp(hdr.magic, trace::kMagic, sizeof hdr.magic) == 0;
  if (trace && hdr.state == uint32_t(trace::FileState::kRecording)) {
    uint32_t state = uint32_t(trace::FileState::kSnapshot);
    if (::pwrite(fd, &state, sizeof state, off_t(offsetof(trace::FileHeader, state))) != ssize_t(sizeof state)) {
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot mark {} as a snapshot: {}", path, std::strerror(errno)));
    }
  }
  struct stat st {};
  if (trace && hdr.header_size == trace::kFileHeaderSize && hdr.chunk_size == trace::kChunkSize &&
      ::fstat(fd, &st) == 0) {
    off_t written = off_t(trace::kFileHeaderSize) + off_t(hdr.chunks_claimed) * trace::kChunkSize;
    if (written < st.st_size && ::ftruncate(fd, written) != 0) {
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot cut {} to what was written: {}", path, std::strerror(errno)));
    }
  }
  ::close(fd);
}

std::string stamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

int cmd_snapshot(const Args& args) {
  std::string out;
  bool quiet = false;
  OptionParser options(kHelp);
  options.value("-o,--output", [&](const std::string& v) { out = v; });
  options.flag("-q,--quiet", [&] { quiet = true; });
  std::vector<std::string> operands;
  if (!options.parse(args, &operands)) return kExitOk;
  if (operands.empty()) throw UsageError("no run directory or process given; usage: cuprobe snapshot [-o DIR] RUN_DIR|PID...");

  // What to copy: every trace file of every run directory named (a PID stands for its own).
  std::set<std::string> dirs;
  for (const auto& op : operands) {
    std::error_code ec;
    if (fs::is_directory(op, ec)) {
      dirs.insert(fs::absolute(op).lexically_normal().string());
    } else if (all_digits(op)) {
      for (const auto& d : run_dirs_of(op)) dirs.insert(d);
    } else {
      throw UsageError(fmt::format("{}: not a run directory or a process id", op));
    }
  }
  std::vector<std::string> files;
  for (const auto& d : dirs) {
    auto found = reader::find_trace_files(d);
    if (!found) throw UsageError(found.error().message);
    files.insert(files.end(), found->begin(), found->end());
  }
  if (files.empty()) {
    throw UsageError(fmt::format("no trace file (*.cuprobe) in {} yet: the job has not made a CUDA call under "
                                 "cuprobe, or writes elsewhere",
                                 *dirs.begin()));
  }

  if (out.empty()) out = fmt::format("{}-snapshot-{}", fs::path(*dirs.begin()).string(), stamp());
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec))) {
    throw UsageError(fmt::format("-o {}: exists and is not an empty directory", out));
  }
  // The copies go where a run directory could (record's rules): this user's own directory, which
  // nobody else can write into or swap.
  bool created = false;
  if (std::string problem = run_dir_problem(fs::absolute(out).lexically_normal().string(), true, &created);
      !problem.empty()) {
    throw UsageError(fmt::format("-o {}: {}", out, problem));
  }

  // Copies keep their names; two run directories with a file of one name keep both.
  auto t0 = std::chrono::steady_clock::now();
  uint64_t bytes = 0, events = 0;
  std::set<std::string> used;
  for (const auto& f : files) {
    std::string name = fs::path(f).filename().string();
    for (int k = 2; used.count(name); ++k) name = fmt::format("{}-{}.cuprobe", fs::path(f).stem().string(), k);
    used.insert(name);
    fs::path to = fs::path(out) / name;
    if (!fs::copy_file(f, to, fs::copy_options::none, ec)) {
      throw std::runtime_error(fmt::format("cannot copy {} to {}: {}", f, to.string(), ec.message()));
    }
    mark_snapshot(to.string());
    bytes += fs::file_size(to, ec);
    auto traces = reader::open_traces(to.string());
    if (!traces) {
      throw std::runtime_error(fmt::format("the copy of {} cannot be read: {}", f, traces.error().message));
    }
    for (const auto& t : *traces) events += t->call_records();
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) {
    fmt::print(stderr, "cuprobe snapshot: {} trace{} ({} calls, {:.1f} MiB) copied to {} in {:.2f} s; cuprobe analyze {}\n",
               files.size(), files.size() == 1 ? "" : "s", events, double(bytes) / (1 << 20), out, s, out);
  }
  return kExitOk;
}

}  // namespace cuprobe::cli
