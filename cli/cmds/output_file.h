// How every `cuprobe` command writes a file (export, report, plans export, --pin-plans-learn):
// the destination's directory must be one no other user can change (common/safe_files.h); the
// content goes to a temporary beside it whose name nobody else can have chosen (mkostemps:
// O_EXCL, so never through a planted link), is flushed to disk and renamed over the destination,
// which is replaced, never followed. An interrupted write (an error, Ctrl-C, a job's time limit:
// SIGINT, SIGTERM, SIGHUP) leaves no temporary behind and the destination as it was.
#pragma once

#include <signal.h>

#include <cstdint>
#include <string>

namespace cuprobe::cli {

class OutputFile {
 public:
  // Checks `dest` and creates the temporary; UsageError naming `option` ("-o") and the fix when
  // `dest` is a directory, its directory does not exist, or that directory is not private.
  OutputFile(const std::string& option, const std::string& dest);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Where to write (a file of this user, mode 0600 until commit).
  const std::string& temp() const { return temp_; }
  // Flushes the temporary, gives it the mode a new file would get (0666 less the umask) and
  // renames it over the destination; the error, or "" when written.
  std::string commit();

 private:
  std::string dest_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3] = {};
};

// The whole of an input file (a plan file): a regular file of at most `max_bytes`, read without
// blocking on a FIFO (common/safe_files.h); UsageError starting with `what` otherwise.
std::string read_input_file(const std::string& what, const std::string& path, uint64_t max_bytes);

// What is wrong with `dir` as a run directory (record -o, snapshot -o), with the fix; "" when
// nothing. With `create`, a missing directory is made 0700 first (`created` says whether it was).
std::string run_dir_problem(const std::string& dir, bool create, bool* created);

// "alice (uid 1000)", or "uid 1000" when /etc/passwd does not name it.
std::string user_name(unsigned uid);
// The name of user or group `id` in /etc/passwd or /etc/group; "" when it is not there.
std::string account_name(const char* file, unsigned id);

}  // namespace cuprobe::cli
