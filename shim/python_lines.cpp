// Line tables of CPython code objects: see python_lines.h.
#include "python_lines.h"

namespace cuprobe::shim {

int line_from_linetable_310(const uint8_t* table, size_t n, int first_line, int64_t offset) {
  // Each pair covers [end, end + byte delta) and moves the line by a signed delta; -128 marks a
  // range without a line. Empty ranges still move the line (long jumps are split into them).
  if (offset < 0) return first_line;
  int64_t line = first_line, end = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    int64_t start = end;
    end += table[i];
    auto delta = int8_t(table[i + 1]);
    bool none = delta == -128;
    if (!none) line += delta;
    if (offset >= start && offset < end) return none ? 0 : int(line);
  }
  return 0;
}

namespace {

// Location-table integers: 6 bits per byte, bit 6 says another byte follows.
struct Cursor {
  const uint8_t* p;
  size_t n, i;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; i < n && shift < 64; shift += 6) {
      uint8_t b = p[i++];
      v |= uint64_t(b & 63) << shift;
      if (!(b & 64)) break;
    }
    return v;
  }
  int64_t svarint() {
    uint64_t u = varint();
    return (u & 1) ? -int64_t(u >> 1) : int64_t(u >> 1);
  }
};

constexpr int kNoColumns = 13, kLong = 14, kNoLocation = 15;

}  // namespace

int line_from_locations(const uint8_t* table, size_t n, int first_line, int64_t unit) {
  Cursor c{table, n, 0};
  int64_t line = first_line, addr = 0;
  while (c.i < n) {
    uint8_t first = table[c.i++];
    if (!(first & 0x80)) return 0;  // not the start of an entry: lost track of the table
    int kind = (first >> 3) & 15;
    int64_t length = (first & 7) + 1;
    if (kind == kLong) {
      line += c.svarint();
      c.varint();  // end line delta, column, end column
      c.varint();
      c.varint();
    } else if (kind == kNoColumns) {
      line += c.svarint();
    } else if (kind >= 10 && kind <= 12) {  // one line, moved by kind - 10; two column bytes
      line += kind - 10;
      c.i += 2;
    } else if (kind < 10) {  // the same line; one column byte
      c.i += 1;
    }
    if (unit >= addr && unit < addr + length) return kind == kNoLocation ? 0 : int(line);
    addr += length;
  }
  return 0;
}

}  // namespace cuprobe::shim
