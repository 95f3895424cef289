// File status without glibc's stat family. glibc 2.33 turned fstat/stat/lstat from inline
// wrappers of __fxstat & co into exported functions, so a shim built on a newer glibc would need
// fstat@GLIBC_2.33 and no longer load into a process of an older distribution (RHEL 8 and
// manylinux_2_28 have glibc 2.28); statx needs 2.28 itself. The system calls underneath have been
// stable since Linux 2.6.16, and on x86_64 and aarch64 the kernel's struct stat is glibc's.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cuprobe {

inline int fd_status(int fd, struct stat* st) { return int(syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH)); }

// follow: whether a final symbolic link is followed (stat) or described itself (lstat).
inline int path_status(const char* path, struct stat* st, bool follow) {
  return int(syscall(SYS_newfstatat, AT_FDCWD, path, st, follow ? 0 : AT_SYMLINK_NOFOLLOW));
}

}  // namespace cuprobe
