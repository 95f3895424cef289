// See output_file.h.
#include "cmds/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli.h"
#include "safe_files.h"

namespace cuprobe::cli {

namespace fs = std::filesystem;

namespace {

// The temporary being written, removed when a signal stops the command: set before the handlers
// are installed, read only by them.
char g_partial[4096];

void remove_partial_and_die(int sig) {
  if (g_partial[0] != '\0') unlink(g_partial);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

OutputFile::OutputFile(const std::string& option, const std::string& dest) : dest_(dest) {
  std::error_code ec;
  fs::path out(dest);
  if (dest.empty()) throw UsageError(fmt::format("{} expects a file name", option));
  if (fs::is_directory(out, ec)) throw UsageError(fmt::format("{} {}: is a directory; name a file", option, dest));
  fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw UsageError(fmt::format("{} {}: directory {} does not exist", option, dest, parent.string()));
  }
  if (files::Why why; !files::private_dir(parent.c_str(), &why)) {
    throw UsageError(fmt::format("{} {}: cuprobe does not write there: {}", option, dest, why.text));
  }
  std::string name = out.filename().string();
  std::string templ = (parent / ("." + name + ".XXXXXX.part")).string();
  fd_ = mkostemps(templ.data(), 5, O_CLOEXEC);
  if (fd_ < 0) throw UsageError(fmt::format("{} {}: cannot create a file there: {}", option, dest, std::strerror(errno)));
  temp_ = templ;
  if (temp_.size() < sizeof g_partial) {
    std::memcpy(g_partial, temp_.c_str(), temp_.size() + 1);
    struct sigaction sa {};
    sa.sa_handler = remove_partial_and_die;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
}

OutputFile::~OutputFile() {
  if (!committed_ && !temp_.empty()) unlink(temp_.c_str());
  if (fd_ >= 0) close(fd_);
  if (g_partial[0] != '\0' && temp_ == g_partial) {
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    g_partial[0] = '\0';
  }
}

std::string read_input_file(const std::string& what, const std::string& path, uint64_t max_bytes) {
  files::Why why;
  uint64_t size = 0;
  int fd = files::open_input(path.c_str(), max_bytes, &size, &why);
  if (fd < 0) throw UsageError(fmt::format("{}: {}", what, why.text));
  std::string text(size_t(size), '\0');
  bool ok = files::read_exact(fd, text.data(), size);
  close(fd);
  if (!ok) throw UsageError(fmt::format("{}: {} changed while it was read; try again", what, path));
  return text;
}

std::string OutputFile::commit() {
  // The writer wrote through its own descriptor (or SQLite's); this one still names the file.
  mode_t mask = umask(0);
  umask(mask);
  if (fsync(fd_) != 0 || fchmod(fd_, 0666 & ~mask) != 0) return std::strerror(errno);
  if (rename(temp_.c_str(), dest_.c_str()) != 0) return std::strerror(errno);
  committed_ = true;
  return "";
}

// The name of user or group `id` in /etc/passwd or /etc/group ("" when it is not there). Read
// directly rather than through getpwuid/getgrgid: the `cuprobe` command is linked statically (it
// must run on any distribution), and a static glibc's NSS would load the system's NSS modules,
// built for another glibc. Accounts only a directory service knows are named by number.
std::string account_name(const char* file, unsigned id) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t name_end = line.find(':');
    size_t id_at = name_end == std::string::npos ? name_end : line.find(':', name_end + 1);
    if (id_at == std::string::npos) continue;
    unsigned value = 0;
    const char* first = line.data() + id_at + 1;
    const char* last = line.data() + line.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc() && ptr != first && ptr < last && *ptr == ':' && value == id) return line.substr(0, name_end);
  }
  return "";
}

std::string user_name(unsigned uid) {
  std::string name = account_name("/etc/passwd", uid);
  return name.empty() ? fmt::format("uid {}", uid) : fmt::format("{} (uid {})", name, uid);
}

// Creates every missing component of `dir` with mode 0700, as the shim does (make_run_dir);
// `created` says whether `dir` itself was made here.
std::string make_dirs(const std::string& dir, bool* created) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    std::string prefix = dir.substr(0, i);
    if (mkdir(prefix.c_str(), 0700) == 0) {
      if (i == dir.size()) *created = true;
    } else if (errno != EEXIST) {
      return fmt::format("cannot create {}: {}", prefix, std::strerror(errno));
    }
  }
  return "";
}

// What is wrong with `dir` as a run directory, with the fix; "" when nothing. The shim (make_run_dir)
// refuses a final symbolic link owned by another user and anything but a directory; record is
// stricter and also refuses a directory someone else can write into (another owner, or group or
// world write permission, sticky or not): they could replace a trace, or add a crafted one that
// `cuprobe analyze` would read as part of the run. With `create`, a missing directory is made
// 0700 first.
std::string run_dir_problem(const std::string& dir, bool create, bool* created) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT || !create) return fmt::format("it cannot be examined: {}", std::strerror(errno));
    if (std::string why = make_dirs(dir, created); !why.empty()) return why;
    if (lstat(dir.c_str(), &st) != 0) return fmt::format("it cannot be examined: {}", std::strerror(errno));
  }
  const std::string own_dir = "choose a directory of your own with -o DIR (a missing one is created with mode 0700)";
  if (S_ISLNK(st.st_mode)) {
    if (st.st_uid != geteuid() && st.st_uid != 0) {
      return fmt::format("it is a symbolic link owned by another user, {}, which the shim refuses to follow; {}",
                         user_name(st.st_uid), own_dir);
    }
    if (stat(dir.c_str(), &st) != 0) return fmt::format("it is a symbolic link to nothing usable: {}", std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return fmt::format("it exists and is not a directory; {}", own_dir);
  if (st.st_uid != geteuid()) {
    return fmt::format("it belongs to another user, {}, who could replace its traces or add crafted ones; {}",
                       user_name(st.st_uid), own_dir);
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    const char* who = (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "its group and all users"
                      : (st.st_mode & S_IWGRP)                         ? "its group"
                                                                       : "all users";
    return fmt::format("it is writable by {} (mode {:04o}), who could replace its traces or add crafted ones; "
                       "take their write permission away (chmod go-w {}) or {}",
                       who, st.st_mode & 07777, dir, own_dir);
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) return fmt::format("cannot write into it: {}", std::strerror(errno));
  // The directories above it too: one that another user can write into without the sticky bit
  // lets them swap the run directory for theirs in the middle of the run.
  if (files::Why why; !files::private_dir(dir.c_str(), &why)) return why.text;
  return "";
}

}  // namespace cuprobe::cli
