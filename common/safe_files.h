// Files cuprobe does not trust, and places it writes into: one way to open each, shared by the
// shim (inside the traced job: no allocation beyond a path buffer, no glibc newer than 2.17) and
// the `cuprobe` command. docs/security.md says what is trusted and what is refused.
//
//   inputs (plan files, fault plans, traces)  regular files only, opened without blocking (a FIFO
//                                             or a device is refused, not waited on), at most a
//                                             given size; read into private memory, never mapped
//                                             shared (a writer truncating it cannot kill the job)
//   output directories                        the directory and every directory above it is owned
//                                             by this user or root and writable by nobody else,
//                                             or sticky (like /tmp) and owned by this user or root;
//                                             no symbolic link of another user on the way
//   files appended to (alerts)                the above for its directory, then opened without
//                                             following a link or blocking: a regular file of this
//                                             user with one name
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

namespace cuprobe::files {

// Why a path was refused: one sentence for a message, with the fix where there is one.
struct Why {
  char text[640];
};

// "a FIFO", "a socket", "a character device", ... or "not a regular file": what a file that is
// not a regular one is, for messages.
const char* kind_of(mode_t mode);

// Opens `path` for reading as an input: a regular file of at most `max_bytes` (0: any size).
// `what` names it in messages ("the plan file"). The descriptor (blocking again) and its size, or
// -1 with `why`.
int open_input(const char* path, uint64_t max_bytes, uint64_t* size, Why* why);

// Reads the first `n` bytes of `fd` into `buf`; false when the file has fewer now (it changed).
bool read_exact(int fd, char* buf, uint64_t n);

// Whether `dir` (which must exist) is a directory that no other user can change under cuprobe:
// see the header comment. false with `why` when not.
bool private_dir(const char* dir, Why* why);

// Opens `path` for appending lines (CUPROBE_ALERTS=file:PATH): its directory private, the file
// created 0600 or an existing regular file of this user with no other name (no hard link), never
// through a symbolic link, never blocking (a FIFO is refused). -1 with `why`.
int open_append(const char* path, Why* why);

}  // namespace cuprobe::files
