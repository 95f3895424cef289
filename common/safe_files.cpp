// See safe_files.h. File status comes from sys_stat.h (system calls), so that the shim keeps
// loading on glibc 2.17.
#include "safe_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys_stat.h"

namespace cuprobe::files {

namespace {

bool ours(uid_t uid) { return uid == geteuid() || uid == 0; }


// "its group", "all users" or "its group and all users": who besides the owner may write.
const char* writers(mode_t mode) {
  bool g = (mode & S_IWGRP) != 0, o = (mode & S_IWOTH) != 0;
  return g && o ? "its group and all users" : g ? "its group" : "all users";
}

// The checks on one directory of the real path.
bool check_dir(const char* dir, const struct stat& st, Why* why) {
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why->text, sizeof why->text, "%s is not a directory", dir);
    return false;
  }
  bool sticky = (st.st_mode & S_ISVTX) != 0;
  if (!ours(st.st_uid)) {
    snprintf(why->text, sizeof why->text,
             "%s belongs to another user (uid %u), who could replace or read what cuprobe writes below it; use a "
             "directory of your own",
             dir, unsigned(st.st_uid));
    return false;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky) {
    snprintf(why->text, sizeof why->text,
             "%s is writable by %s (mode %04o) without the sticky bit, so they could swap what cuprobe writes below it; "
             "take their write permission away (chmod go-w %s) or use a directory of your own",
             dir, writers(st.st_mode), unsigned(st.st_mode & 07777), dir);
    return false;
  }
  return true;
}

}  // namespace

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

int open_input(const char* path, uint64_t max_bytes, uint64_t* size, Why* why) {
  // O_NONBLOCK: opening a FIFO nobody writes to would otherwise wait forever; O_NOCTTY: a
  // terminal device named here must not become the controlling terminal.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    snprintf(why->text, sizeof why->text, "%s: cannot open it: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fd_status(fd, &st) != 0) {
    snprintf(why->text, sizeof why->text, "%s: cannot examine it: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why->text, sizeof why->text, "%s is %s%s; give a regular file", path, kind_of(st.st_mode),
             S_ISFIFO(st.st_mode) ? " (named pipe)" : "");
    close(fd);
    return -1;
  }
  if (max_bytes != 0 && uint64_t(st.st_size) > max_bytes) {
    snprintf(why->text, sizeof why->text, "%s is larger than %llu MiB (%llu bytes)", path,
             static_cast<unsigned long long>(max_bytes >> 20), static_cast<unsigned long long>(st.st_size));
    close(fd);
    return -1;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *size = uint64_t(st.st_size);
  return fd;
}

bool read_exact(int fd, char* buf, uint64_t n) {
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, buf + done, size_t(n - done), off_t(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += uint64_t(r);
  }
  return true;
}

bool private_dir(const char* dir, Why* why) {
  // The path as written: a symbolic link on the way that another user owns could be pointed
  // anywhere at any time.
  char path[PATH_MAX];
  size_t len = 0;
  if (dir[0] != '/') {
    if (getcwd(path, sizeof path) == nullptr) {
      snprintf(why->text, sizeof why->text, "%s: cannot tell the current directory: %s", dir, strerror(errno));
      return false;
    }
    len = strlen(path);
  }
  int n = snprintf(path + len, sizeof path - len, "%s%s", len > 0 ? "/" : "", dir);
  if (n < 0 || size_t(n) >= sizeof path - len) {
    snprintf(why->text, sizeof why->text, "%.200s...: the path is too long", dir);
    return false;
  }
  len = strlen(path);
  while (len > 1 && path[len - 1] == '/') path[--len] = 0;
  for (size_t i = 1; i <= len; ++i) {
    if (path[i] != '/' && path[i] != 0) continue;
    char saved = path[i];
    path[i] = 0;
    struct stat st;
    if (path_status(path, &st, false) != 0) {
      snprintf(why->text, sizeof why->text, "%s: cannot examine it: %s", path, strerror(errno));
      return false;
    }
    if (S_ISLNK(st.st_mode) && !ours(st.st_uid)) {
      snprintf(why->text, sizeof why->text,
               "%s is a symbolic link owned by another user (uid %u), who could point it anywhere; give the path "
               "without it",
               path, unsigned(st.st_uid));
      return false;
    }
    path[i] = saved;
  }
  // The real path, from the root down: "/", then each directory under it.
  char real[PATH_MAX];
  if (realpath(path, real) == nullptr) {
    snprintf(why->text, sizeof why->text, "%s: cannot resolve it: %s", dir, strerror(errno));
    return false;
  }
  len = strlen(real);
  for (size_t i = 1; i <= len; ++i) {
    if (i > 1 && real[i] != '/' && real[i] != 0) continue;
    char saved = real[i];
    real[i] = 0;
    const char* at = i == 1 ? "/" : real;
    struct stat st;
    if (path_status(at, &st, true) != 0) {
      snprintf(why->text, sizeof why->text, "%s: cannot examine it: %s", at, strerror(errno));
      return false;
    }
    if (!check_dir(at, st, why)) return false;
    real[i] = saved;
  }
  return true;
}

int open_append(const char* path, Why* why) {
  char dir[PATH_MAX];
  int n = snprintf(dir, sizeof dir, "%s", path);
  if (n < 0 || size_t(n) >= sizeof dir) {
    snprintf(why->text, sizeof why->text, "%.200s...: the path is too long", path);
    return -1;
  }
  char* slash = strrchr(dir, '/');
  if (slash == nullptr) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = 0;
  else *slash = 0;
  if (!private_dir(dir, why)) return -1;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    struct stat st;
    if (err == ELOOP || (path_status(path, &st, false) == 0 && S_ISLNK(st.st_mode))) {
      snprintf(why->text, sizeof why->text, "%s is a symbolic link, which cuprobe does not follow; name the file itself",
               path);
    } else if (err == ENXIO || (path_status(path, &st, false) == 0 && !S_ISREG(st.st_mode))) {
      snprintf(why->text, sizeof why->text, "%s is not a regular file; name a file", path);
    } else {
      snprintf(why->text, sizeof why->text, "%s: cannot open it: %s", path, strerror(err));
    }
    return -1;
  }
  struct stat st;
  const char* bad = nullptr;
  if (fd_status(fd, &st) != 0) bad = "cannot be examined";
  else if (!S_ISREG(st.st_mode)) bad = kind_of(st.st_mode);
  else if (st.st_uid != geteuid()) bad = "a file of another user";
  else if (st.st_nlink != 1) bad = "a file with other names (hard links)";
  if (bad != nullptr) {
    snprintf(why->text, sizeof why->text, "%s is %s, which cuprobe does not append to; name a new file", path, bad);
    close(fd);
    return -1;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

}  // namespace cuprobe::files
