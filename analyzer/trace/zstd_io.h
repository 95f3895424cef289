// Traces and facts compressed with zstd (libzstd, Debian libzstd-dev; linked statically into
// `cuprobe`): `cuprobe pack` writes them, every reader takes them as they are. A compressed file
// is recognised by zstd's frame magic, whatever its name; what it holds (a binary trace, JSON
// Lines, facts) is told from its first bytes once unpacked, as for a plain file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "trace/result.h"

namespace cuprobe::zstd {

// Whether the bytes begin with a zstd frame (magic 0xFD2FB528, little-endian).
bool has_magic(const void* data, size_t n);
// Whether the open file does (reads its first bytes with pread; the offset is unchanged).
bool fd_has_magic(int fd);

// Unpacked bytes in an anonymous private mapping (munmap(base, size) gives them back). A file of
// several frames (zstd files concatenated) unpacks to their concatenation.
struct Unpacked {
  char* base = nullptr;
  size_t size = 0;
};
// Unpacks the file open on `fd` (read from its start) into memory; refuses to go past max_bytes
// (a damaged or hostile file that claims or unpacks to more), naming `name` in every error. An
// empty result is an error too (nothing to read).
Result<Unpacked> unpack_fd(int fd, const std::string& name, uint64_t max_bytes);
// The first unpacked bytes of the file open on `fd` (up to n; fewer when it holds fewer or is
// damaged): what kind of file it holds.
std::string peek_fd(int fd, size_t n);
// The most a reader unpacks of one file: half the machine's physical memory (at least 1 GiB).
uint64_t default_unpack_limit();

// Packs `src` (read to its end) into `dst` as one zstd frame at `level` (1..19) with `threads`
// workers (0: in the calling thread); `progress` (may be empty) hears of bytes read so far.
struct PackStats {
  uint64_t in_bytes = 0;
  uint64_t out_bytes = 0;
};
Result<PackStats> pack_fd(int src, int dst, int level, int threads, const std::function<void(uint64_t)>& progress);

}  // namespace cuprobe::zstd
