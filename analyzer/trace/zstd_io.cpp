// zstd in and out of cuprobe's files; see zstd_io.h.
#include "trace/zstd_io.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <fmt/format.h>

namespace cuprobe::zstd {

namespace {

constexpr uint32_t kMagic = 0xFD2FB528u;

ssize_t read_some(int fd, void* buf, size_t n) {
  for (;;) {
    ssize_t got = ::read(fd, buf, n);
    if (got >= 0 || errno != EINTR) return got;
  }
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= size_t(put);
  }
  return true;
}

// Anonymous memory that grows (mremap may move it): the unpacked bytes.
class Growing {
 public:
  ~Growing() {
    if (base_ != nullptr) munmap(base_, cap_);
  }
  bool reserve(size_t want) {
    if (want <= cap_) return true;
    void* p = base_ == nullptr
                  ? mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                  : mremap(base_, cap_, want, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) return false;
    base_ = static_cast<char*>(p);
    cap_ = want;
    return true;
  }
  char* base() const { return base_; }
  size_t cap() const { return cap_; }
  // Hands the bytes over, trimmed to `used` (at least one page stays mapped).
  Unpacked release(size_t used) {
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    size_t keep = (used + page - 1) / page * page;
    if (keep == 0) keep = page;
    if (keep < cap_) {
      munmap(base_ + keep, cap_ - keep);
      cap_ = keep;
    }
    Unpacked u{base_, used};
    base_ = nullptr;
    cap_ = 0;
    return u;
  }

 private:
  char* base_ = nullptr;
  size_t cap_ = 0;
};

}  // namespace

bool has_magic(const void* data, size_t n) {
  uint32_t m = 0;
  if (n < sizeof m) return false;
  std::memcpy(&m, data, sizeof m);
  return m == kMagic;
}

bool fd_has_magic(int fd) {
  unsigned char b[4];
  ssize_t got;
  do {
    got = ::pread(fd, b, sizeof b, 0);
  } while (got < 0 && errno == EINTR);
  return got == ssize_t(sizeof b) && has_magic(b, sizeof b);
}

uint64_t default_unpack_limit() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  uint64_t half = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 2 : 0;
  return half < (1ull << 30) ? (1ull << 30) : half;
}

Result<Unpacked> unpack_fd(int fd, const std::string& name, uint64_t max_bytes) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) return Error{fmt::format("{}: out of memory for the zstd decoder", name)};
  std::vector<char> in(ZSTD_DStreamInSize());
  Growing out;
  size_t used = 0;
  size_t last_ret = 0;
  bool any = false;
  uint64_t file_off = 0;
  if (::lseek(fd, 0, SEEK_SET) < 0 && errno != ESPIPE) {
    return Error{fmt::format("{}: cannot read from its start: {}", name, std::strerror(errno))};
  }
  for (;;) {
    ssize_t got = read_some(fd, in.data(), in.size());
    if (got < 0) return Error{fmt::format("{}: cannot read: {}", name, std::strerror(errno))};
    if (got == 0) break;
    if (!any) {
      // The frame says how much it holds when the writer knew (cuprobe pack always does): the
      // mapping is made that size at once.
      unsigned long long size = ZSTD_getFrameContentSize(in.data(), size_t(got));
      if (size == ZSTD_CONTENTSIZE_ERROR) {
        return Error{fmt::format("{}: not a zstd file (bad frame header)", name)};
      }
      if (size != ZSTD_CONTENTSIZE_UNKNOWN && size > max_bytes) {
        return Error{
            fmt::format("{}: unpacks to {} bytes, more than the {} this reader takes (half the machine's "
                        "memory); unpack it with `zstd -d` and read the file it writes",
                        name, size, max_bytes)};
      }
      if (!out.reserve(size != ZSTD_CONTENTSIZE_UNKNOWN && size > 0 ? size_t(size) : size_t(64) << 20)) {
        return Error{fmt::format("{}: cannot map memory to unpack it: {}", name, std::strerror(errno))};
      }
      any = true;
    }
    ZSTD_inBuffer ib{in.data(), size_t(got), 0};
    while (ib.pos < ib.size) {
      if (used == out.cap()) {
        size_t grow = out.cap() < (size_t(1) << 30) ? out.cap() : (size_t(1) << 30);
        if (uint64_t(out.cap()) + grow > max_bytes) grow = size_t(max_bytes - out.cap());
        if (grow == 0) {
          return Error{
              fmt::format("{}: unpacks to more than the {} bytes this reader takes (half the machine's "
                          "memory); unpack it with `zstd -d` and read the file it writes",
                          name, max_bytes)};
        }
        if (!out.reserve(out.cap() + grow)) {
          return Error{fmt::format("{}: cannot map memory to unpack it: {}", name, std::strerror(errno))};
        }
      }
      ZSTD_outBuffer ob{out.base() + used, out.cap() - used, 0};
      size_t ret = ZSTD_decompressStream(dctx.get(), &ob, &ib);
      if (ZSTD_isError(ret)) {
        return Error{fmt::format("{}: damaged zstd data near byte {} of the file: {}", name, file_off + ib.pos,
                                 ZSTD_getErrorName(ret))};
      }
      used += ob.pos;
      last_ret = ret;
    }
    file_off += uint64_t(got);
  }
  if (!any) return Error{fmt::format("{}: empty file", name)};
  if (last_ret != 0) {
    return Error{
        fmt::format("{}: the zstd data ends early (the file was cut off after {} bytes); what it held "
                    "cannot be read whole",
                    name, file_off)};
  }
  if (used == 0) return Error{fmt::format("{}: a zstd file that holds nothing", name)};
  return out.release(used);
}

std::string peek_fd(int fd, size_t n) {
  std::string out(n, '\0');
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) return "";
  std::vector<char> in(ZSTD_DStreamInSize());
  size_t used = 0;
  uint64_t off = 0;
  while (used < n) {
    ssize_t got;
    do {
      got = ::pread(fd, in.data(), in.size(), off_t(off));
    } while (got < 0 && errno == EINTR);
    if (got <= 0) break;
    off += uint64_t(got);
    ZSTD_inBuffer ib{in.data(), size_t(got), 0};
    while (ib.pos < ib.size && used < n) {
      ZSTD_outBuffer ob{out.data() + used, n - used, 0};
      size_t ret = ZSTD_decompressStream(dctx.get(), &ob, &ib);
      if (ZSTD_isError(ret)) {
        out.resize(used);
        return out;
      }
      used += ob.pos;
      if (ob.pos == 0 && ret == 0) break;
    }
  }
  out.resize(used);
  return out;
}

Result<PackStats> pack_fd(int src, int dst, int level, int threads, const std::function<void(uint64_t)>& progress) {
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) return Error{"out of memory for the zstd encoder"};
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  if (threads > 0)
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_nbWorkers, threads);  // ignored by a single-threaded libzstd
  struct stat st {};
  if (fstat(src, &st) == 0 && S_ISREG(st.st_mode)) ZSTD_CCtx_setPledgedSrcSize(cctx.get(), uint64_t(st.st_size));
  std::vector<char> in(ZSTD_CStreamInSize());
  std::vector<char> out(ZSTD_CStreamOutSize());
  PackStats s;
  for (;;) {
    ssize_t got = read_some(src, in.data(), in.size());
    if (got < 0) return Error{fmt::format("cannot read: {}", std::strerror(errno))};
    ZSTD_EndDirective mode = got == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer ib{in.data(), size_t(got), 0};
    bool done = false;
    while (!done) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      size_t left = ZSTD_compressStream2(cctx.get(), &ob, &ib, mode);
      if (ZSTD_isError(left)) return Error{fmt::format("zstd: {}", ZSTD_getErrorName(left))};
      if (!write_all(dst, out.data(), ob.pos)) return Error{fmt::format("cannot write: {}", std::strerror(errno))};
      s.out_bytes += ob.pos;
      done = mode == ZSTD_e_end ? left == 0 : ib.pos == ib.size;
    }
    s.in_bytes += uint64_t(got);
    if (progress) progress(s.in_bytes);
    if (got == 0) break;
  }
  return s;
}

}  // namespace cuprobe::zstd
