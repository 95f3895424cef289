// zstd in and out of cuprobe's files (analyzer/trace/zstd_io.h): what pack writes unpacks to the
// same bytes; a damaged, cut or oversized file is an error naming it, never a crash or a short read.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <random>
#include <string>

#include "support/run.h"
#include "trace/zstd_io.h"

namespace cuprobe::test {
namespace {

std::string write_file(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  ::close(fd);
  return path;
}

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::string out;
  char buf[65536];
  for (ssize_t got; (got = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, size_t(got));
  ::close(fd);
  return out;
}

// Packs `bytes` with `threads` workers; the packed file's path.
std::string pack(const std::string& dir, const std::string& bytes, int threads) {
  std::string src = write_file(dir + "/in", bytes);
  std::string dst = dir + "/in.zst";
  int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  int out = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  uint64_t heard = 0;
  auto r = zstd::pack_fd(in, out, 3, threads, [&](uint64_t n) { heard = n; });
  ::close(in);
  ::close(out);
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->in_bytes, bytes.size());
  EXPECT_EQ(heard, bytes.size());
  return dst;
}

Result<std::string> unpack(const std::string& path, uint64_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  auto u = zstd::unpack_fd(fd, path, limit);
  ::close(fd);
  if (!u) return u.error();
  std::string s(u->base, u->size);
  munmap(u->base, u->size);
  return s;
}

std::string sample(size_t n) {
  std::mt19937_64 rng(7);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char(i % 97 == 0 ? rng() : i / 4096);  // compressible, not trivially
  return s;
}

TEST(Zstd, WhatIsPackedUnpacksToTheSameBytes) {
  std::string dir = fresh_dir("zstd-roundtrip");
  for (int threads : {0, 2}) {
    std::string bytes = sample(3 * 1024 * 1024 + 17);
    std::string z = pack(dir, bytes, threads);
    std::string packed = read_file(z);
    EXPECT_TRUE(zstd::has_magic(packed.data(), packed.size()));
    EXPECT_LT(packed.size(), bytes.size() / 4);
    auto back = unpack(z, 1ull << 30);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_TRUE(*back == bytes);
    int fd = ::open(z.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_TRUE(zstd::fd_has_magic(fd));
    EXPECT_EQ(zstd::peek_fd(fd, 100), bytes.substr(0, 100));
    ::close(fd);
  }
  // Two frames one after the other (zstd files concatenated) unpack to both.
  std::string a = read_file(pack(dir, "first part\n", 0));
  std::string b = read_file(pack(dir, "second part\n", 0));
  auto both = unpack(write_file(dir + "/two.zst", a + b), 1 << 20);
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(*both, "first part\nsecond part\n");
}

TEST(Zstd, DamagedCutOrOversizedFilesAreNamedErrors) {
  std::string dir = fresh_dir("zstd-damaged");
  std::string bytes = sample(1024 * 1024);
  std::string packed = read_file(pack(dir, bytes, 0));

  auto cut = unpack(write_file(dir + "/cut.zst", packed.substr(0, packed.size() / 2)), 1ull << 30);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find(dir + "/cut.zst: the zstd data ends early"), std::string::npos)
      << cut.error().message;

  std::string flipped = packed;
  for (size_t i = packed.size() / 3; i < packed.size() / 3 + 64; ++i) flipped[i] = char(flipped[i] ^ 0x5a);
  auto bad = unpack(write_file(dir + "/bad.zst", flipped), 1ull << 30);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("damaged zstd data"), std::string::npos) << bad.error().message;

  // More than the reader takes: refused from the size the frame declares, before unpacking.
  auto big = unpack(write_file(dir + "/big.zst", packed), 4096);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("unpacks to 1048576 bytes, more than the 4096"), std::string::npos)
      << big.error().message;

  auto empty = unpack(write_file(dir + "/empty.zst", ""), 1 << 20);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("empty file"), std::string::npos) << empty.error().message;

  auto junk =
      unpack(write_file(dir + "/junk.zst", std::string("\x28\xb5\x2f\xfd", 4) + std::string(40, '\xff')), 1 << 20);
  ASSERT_FALSE(junk.ok());
  EXPECT_FALSE(junk.error().message.empty());
  EXPECT_GE(zstd::default_unpack_limit(), 1ull << 30);
}

}  // namespace
}  // namespace cuprobe::test
