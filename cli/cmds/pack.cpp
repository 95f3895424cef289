// `cuprobe pack`: traces at rest compressed with zstd (issue 30). Each trace becomes NAME.zst
// beside it; every command reads the packed file as it is (analyzer/trace/zstd_io.h). The
// original goes only once its packed copy is on disk and unpacks to exactly its bytes.
//
// Written here over libzstd (not by running the zstd tool): the tool may be missing on a compute
// node, and the read-back check and the live-trace check need the file's contents anyway.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "bytes_text.h"
#include "cli.h"
#include "cmds/output_file.h"
#include "cuprobe/trace_format.h"
#include "trace/reader.h"
#include "trace/zstd_io.h"

namespace cuprobe::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kHelp = R"HELP(Usage: cuprobe pack [options] RUN_DIR|TRACE...

Compresses traces at rest with zstd: each trace file (*.cuprobe, or *.jsonl from cuprobe dump)
becomes NAME.zst beside it. Every cuprobe command (analyze, report, export, dump, plans, facts)
reads packed traces as they are; `zstd -d FILE` gives the original back. The original is
removed only once its packed copy is on disk and unpacks to exactly the original's bytes.

A trace whose process is still recording it (a job that runs, on this machine) is left as it
is and named; pack it after the job. A trace cut short by a crash is packed like any other.

Options:
  -l, --level N        zstd level, 1 (fastest) to 19 (smallest); default 3
  -j, --threads N      zstd worker threads per file; default: this machine's CPUs, at most 8
  -k, --keep           keep the original files beside the packed ones (readers then read the
                       originals and skip the packed copies)
  -q, --quiet          no progress and no summary line
  -h, --help           this text

Exit status: 0 when every trace named was packed (or already was), 2 for a usage error or when
a trace could not be packed (each is named; the others are packed).
)HELP";

struct Options {
  int level = 3;
  int threads = 0;
  bool keep = false;
  bool quiet = false;
};

// Whether a process of this machine has `path` open for writing: the recorder of a live trace.
bool written_by_live_process(const std::string& path, uint32_t pid) {
  struct stat want {};
  if (::stat(path.c_str(), &want) != 0) return false;
  std::error_code ec;
  fs::path fds = fs::path("/proc") / std::to_string(pid) / "fd";
  for (const auto& fd : fs::directory_iterator(fds, ec)) {
    struct stat st {};
    if (::stat(fd.path().c_str(), &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino) return true;
  }
  return false;
}

struct Packed {
  uint64_t in = 0, out = 0;
};

// Packs one file; the error, or "" when packed.
std::string pack_one(const std::string& path, const Options& o, Packed* done, bool* dir_refused) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return fmt::format("cannot open: {}", std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return "not a regular file";
  }
  if (zstd::fd_has_magic(fd)) {
    ::close(fd);
    return "";  // already packed (named by hand)
  }
  trace::FileHeader hdr{};
  if (::pread(fd, &hdr, sizeof hdr, 0) == ssize_t(sizeof hdr) &&
      std::memcmp(hdr.magic, trace::kMagic, sizeof hdr.magic) == 0 &&
      hdr.state == uint32_t(trace::FileState::kRecording) && written_by_live_process(path, hdr.pid)) {
    ::close(fd);
    return fmt::format("still being recorded by process {} on this machine; pack it after the job ends", hdr.pid);
  }
  std::string dest = path + ".zst";
  std::string error;
  try {
    OutputFile file("packing into", dest);
    int out = ::open(file.temp().c_str(), O_WRONLY | O_CLOEXEC | O_TRUNC);
    if (out < 0) {
      ::close(fd);
      return fmt::format("cannot write {}: {}", file.temp(), std::strerror(errno));
    }
    auto r = zstd::pack_fd(fd, out, o.level, o.threads, {});
    ::close(out);
    if (!r) {
      ::close(fd);
      return r.error().message;
    }
    // Read back whole before the original may go: the packed copy holds exactly its bytes.
    int back = ::open(file.temp().c_str(), O_RDONLY | O_CLOEXEC);
    auto u = back < 0 ? Result<zstd::Unpacked>(Error{std::strerror(errno)})
                      : zstd::unpack_fd(back, file.temp(), uint64_t(st.st_size) + 1);
    if (back >= 0) ::close(back);
    if (!u) {
      ::close(fd);
      return fmt::format("the packed copy does not read back: {}", u.error().message);
    }
    bool same = u->size == uint64_t(st.st_size);
    if (same) {
      void* orig = st.st_size > 0 ? mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
      same = orig != MAP_FAILED && (orig == nullptr || std::memcmp(orig, u->base, u->size) == 0);
      if (orig != nullptr && orig != MAP_FAILED) munmap(orig, size_t(st.st_size));
    }
    munmap(u->base, u->size);
    ::close(fd);
    if (!same) return "the file changed while it was packed (is a job still writing it?); left as it is";
    if (std::string err = file.commit(); !err.empty()) return fmt::format("cannot write {}: {}", dest, err);
    chmod(dest.c_str(), st.st_mode & 07777);
    done->in = uint64_t(st.st_size);
    done->out = r->out_bytes;
  } catch (const UsageError& e) {
    ::close(fd);
    *dir_refused = true;  // the directory, not the file: the same for every trace in it
    return e.what();
  }
  if (!o.keep && ::unlink(path.c_str()) != 0) {
    return fmt::format("packed into {}, but the original could not be removed: {}", dest, std::strerror(errno));
  }
  return "";
}

}  // namespace

int cmd_pack(const Args& args) {
  Options o;
  OptionParser options(kHelp);
  options.value("-l,--level", [&](const std::string& v) {
    unsigned long long n = parse_count("--level", v);
    if (n < 1 || n > 19) throw UsageError(fmt::format("--level {}: zstd levels are 1 to 19", v));
    o.level = int(n);
  });
  options.value("-j,--threads", [&](const std::string& v) {
    unsigned long long n = parse_count("--threads", v);
    if (n > 256) throw UsageError(fmt::format("--threads {}: at most 256", v));
    o.threads = int(n);
  });
  options.flag("-k,--keep", [&] { o.keep = true; });
  options.flag("-q,--quiet", [&] { o.quiet = true; });
  std::vector<std::string> paths;
  if (!options.parse(args, &paths)) return kExitOk;
  if (paths.empty()) throw UsageError("no run directory or trace given; usage: cuprobe pack RUN_DIR|TRACE...");
  if (o.threads == 0) o.threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));

  std::vector<std::string> todo;
  bool failed = false;
  for (const auto& p : paths) {
    if (p == "-") throw UsageError("'-': pack reads files, not standard input");
    std::vector<std::string> skipped;
    auto files = reader::find_trace_files(p, &skipped);
    for (const auto& s : skipped) {
      if (s.find("the packed copy of") == std::string::npos) fmt::print(stderr, "cuprobe pack: {}\n", s);
    }
    if (!files) {
      fmt::print(stderr, "cuprobe pack: {}\n", files.error().message);
      failed = true;
      continue;
    }
    for (const auto& f : *files) todo.push_back(f);
  }
  auto start = std::chrono::steady_clock::now();
  auto last_note = start;
  Packed total;
  size_t packed = 0, already = 0, not_packed = 0;
  std::set<std::string> refused_dirs;  // directories cuprobe may not write into
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::string& f = todo[i];
    if (f.size() > 4 && f.compare(f.size() - 4, 4, ".zst") == 0) {
      ++already;
      continue;
    }
    std::string dir = std::filesystem::path(f).parent_path().string();
    if (refused_dirs.count(dir)) {
      ++not_packed;
      continue;
    }
    Packed one;
    bool dir_refused = false;
    std::string err = pack_one(f, o, &one, &dir_refused);
    if (!err.empty()) {
      fmt::print(stderr, "cuprobe pack: {}: {}{}\n", f, err,
                 dir_refused ? "; the directory's other traces are left as they are" : "");
      if (dir_refused) refused_dirs.insert(dir);
      ++not_packed;
      failed = true;
      continue;
    }
    ++packed;
    total.in += one.in;
    total.out += one.out;
    auto now = std::chrono::steady_clock::now();
    if (!o.quiet && now - last_note > std::chrono::seconds(2) && i + 1 < todo.size()) {
      fmt::print(stderr, "cuprobe pack: {} of {} files, {} so far\n", i + 1, todo.size(), human_bytes(total.in));
      last_note = now;
    }
  }
  if (!o.quiet) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "cuprobe pack: {} trace{} packed, {} -> {} ({:.1f}x) in {:.1f} s{}{}\n", packed,
               packed == 1 ? "" : "s", human_bytes(total.in), human_bytes(total.out),
               total.out ? double(total.in) / double(total.out) : 0.0, s,
               already ? fmt::format("; {} already packed", already) : "", o.keep ? "; originals kept" : "");
    if (not_packed)
      fmt::print(stderr, "cuprobe pack: {} trace{} not packed (above)\n", not_packed, not_packed == 1 ? "" : "s");
  }
  return failed ? kExitUsage : kExitOk;
}

}  // namespace cuprobe::cli
