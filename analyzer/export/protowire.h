// A minimal protobuf wire-format writer for the Perfetto export: varints, length-delimited fields
// and doubles into one growing buffer, with nested messages whose length is filled in when they
// end. The `cuprobe` binary must need nothing beyond glibc and libstdc++ at run time, so it
// cannot link libprotobuf; what Perfetto's trace format needs of the wire format is this much.
//
// Contract: begin() returns a mark that must be passed to end() in LIFO order; lengths are
// encoded minimally (a payload of 128 bytes or more is moved up to make room for its length), so
// the output is what libprotobuf would write for the same fields in the same order.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace cuprobe::exporter::proto {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

class Writer {
 public:
  Writer() = default;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void clear() { size_ = 0; }
  std::string_view data() const { return {buf_.get(), size_}; }
  size_t size() const { return size_; }

  void varint(uint32_t field, uint64_t v) {
    reserve(20);
    tag(field, kVarint);
    put_varint(v);
  }
  // int32/int64 fields: negative values are their 64-bit two's complement (10 bytes), as protobuf does.
  void int64(uint32_t field, int64_t v) { varint(field, uint64_t(v)); }
  void boolean(uint32_t field, bool v) { varint(field, v ? 1 : 0); }
  void dbl(uint32_t field, double v) {
    reserve(18);
    tag(field, kFixed64);
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; i++) buf_[size_++] = char((bits >> (8 * i)) & 0xff);
  }
  void bytes(uint32_t field, std::string_view s) {
    reserve(20 + s.size());
    tag(field, kLengthDelimited);
    put_varint(s.size());
    std::memcpy(buf_.get() + size_, s.data(), s.size());
    size_ += s.size();
  }

  // A nested message: fields written until end(mark) belong to it. One byte is kept for its
  // length, which is enough for most (annotations, events); a longer message is moved up by the
  // bytes its length needs beyond that.
  size_t begin(uint32_t field) {
    reserve(11);
    tag(field, kLengthDelimited);
    size_t mark = size_;
    size_ += 1;
    return mark;
  }
  void end(size_t mark) {
    size_t len = size_ - mark - 1;
    if (len < 0x80) {
      buf_[mark] = char(len);
      return;
    }
    char enc[10];
    size_t n = encode(uint64_t(len), enc);
    reserve(n - 1);
    std::memmove(buf_.get() + mark + n, buf_.get() + mark + 1, len);
    size_ += n - 1;
    std::memcpy(buf_.get() + mark, enc, n);
  }

  void raw_varint(uint64_t v) {
    reserve(10);
    put_varint(v);
  }

  static size_t encode(uint64_t v, char* out) {
    size_t n = 0;
    while (v >= 0x80) {
      out[n++] = char((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out[n++] = char(v);
    return n;
  }

 private:
  // Callers reserve room first; the writes below then need no checks (the buffer only grows).
  void reserve(size_t n) {
    if (size_ + n <= cap_) return;
    size_t cap = std::max<size_t>(cap_ * 2, std::max<size_t>(size_ + n, 4096));
    std::unique_ptr<char[]> b(new char[cap]);
    if (size_ != 0) std::memcpy(b.get(), buf_.get(), size_);
    buf_ = std::move(b);
    cap_ = cap;
  }
  void tag(uint32_t field, WireType type) { put_varint((uint64_t(field) << 3) | type); }
  void put_varint(uint64_t v) { size_ += encode(v, buf_.get() + size_); }

  std::unique_ptr<char[]> buf_;
  size_t size_ = 0, cap_ = 0;
};

}  // namespace cuprobe::exporter::proto
