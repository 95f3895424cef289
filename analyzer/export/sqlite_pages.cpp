// SQLite b-tree pages written directly: see sqlite_pages.h. Format references are to
// https://www.sqlite.org/fileformat2.html.
#include "export/sqlite_pages.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace cuprobe::exporter::sqlite_pages {

namespace {

// SQLite's variable-length integer (fileformat2 "Varint"): big-endian groups of 7 bits, the high
// bit set on every byte but the last; a ninth byte, when needed, carries 8 bits.
size_t put_varint(uint8_t* p, uint64_t v) {
  if (v <= 0x7f) {
    p[0] = uint8_t(v);
    return 1;
  }
  if (v <= 0x3fff) {
    p[0] = uint8_t(0x80 | (v >> 7));
    p[1] = uint8_t(v & 0x7f);
    return 2;
  }
  if (v >> 56) {
    p[8] = uint8_t(v);
    v >>= 8;
    for (int i = 7; i >= 0; --i) {
      p[i] = uint8_t((v & 0x7f) | 0x80);
      v >>= 7;
    }
    return 9;
  }
  uint8_t tmp[9];
  size_t n = 0;
  do {
    tmp[n++] = uint8_t((v & 0x7f) | 0x80);
    v >>= 7;
  } while (v);
  tmp[0] &= 0x7f;
  for (size_t i = 0; i < n; ++i) p[i] = tmp[n - 1 - i];
  return n;
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  if (v >> 56) return 9;
  while (v > 0x7f) {
    v >>= 7;
    ++n;
  }
  return n;
}

void put_be(uint8_t* p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t(v >> (8 * (n - 1 - i)));
}

uint64_t get_be(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

// The size of an interior table cell pointing at `c`: a 4-byte page number and the child's largest
// rowid, plus its 2-byte entry in the cell pointer array.
template <typename Child>
size_t interior_cell(const Child& c) {
  return 2 + 4 + varint_size(uint64_t(c.max_rowid));
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

void pwrite_all(int fd, const void* data, size_t n, uint64_t offset, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, off_t(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("cannot write " + path);
    }
    p += w;
    n -= size_t(w);
    offset += uint64_t(w);
  }
}

}  // namespace

void Record::add_long_type(uint64_t type) { types_size_ += put_varint(types_ + types_size_, type); }

void Record::too_many() { throw std::runtime_error("a SQLite record of more than 24 columns"); }

void Record::real(double v) {
  add_type(7);
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_be(reserve(8), bits, 8);
  body_size_ += 8;
}

void Record::text(const char* s, size_t n) {
  add_type(13 + 2 * uint64_t(n));
  std::memcpy(reserve(n), s, n);
  body_size_ += n;
}

void Record::write(uint8_t* out) const {
  size_t at = put_varint(out, header_size());
  std::memcpy(out + at, types_, types_size_);
  std::memcpy(out + at + types_size_, body_.data(), body_size_);
}

std::vector<Value> decode(const std::string& record) {
  std::vector<Value> out;
  const auto* p = reinterpret_cast<const uint8_t*>(record.data());
  size_t n = record.size(), at = 0;
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int i = 0; i < 9 && at < n; ++i) {
      uint8_t b = p[at++];
      if (i == 8) {
        *v = *v << 8 | b;
        return;
      }
      *v = *v << 7 | (b & 0x7f);
      if (!(b & 0x80)) return;
    }
  };
  uint64_t header;
  varint(&header);
  size_t body = size_t(header);
  while (at < size_t(header) && at < n) {
    uint64_t t;
    varint(&t);
    Value v;
    static constexpr size_t kIntBytes[7] = {0, 1, 2, 3, 4, 6, 8};
    if (t == 0) {
      v.type = Value::kNull;
    } else if (t <= 6) {
      size_t len = kIntBytes[t];
      uint64_t raw = body + len <= n ? get_be(p + body, len) : 0;
      int shift = int(64 - 8 * len);
      v.i = int64_t(raw << shift) >> shift;  // sign-extend
      body += len;
    } else if (t == 7) {
      uint64_t raw = body + 8 <= n ? get_be(p + body, 8) : 0;
      std::memcpy(&v.d, &raw, sizeof raw);
      v.type = Value::kReal;
      body += 8;
    } else if (t == 8 || t == 9) {
      v.i = int64_t(t - 8);
    } else {
      size_t len = size_t((t - 12) / 2);
      v.type = t % 2 ? Value::kText : Value::kBlob;
      v.s = std::string_view(record).substr(std::min(body, n), len);
      body += len;
    }
    out.push_back(v);
  }
  return out;
}

Writer::Writer(const std::string& db_path, uint32_t page_size)
    : path_(db_path), page_size_(page_size), max_local_(page_size - 35) {
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1))) {
    throw std::runtime_error(fmt::format("SQLite page size {}: not a power of two from 512 to 65536", page_size));
  }
  fd_ = ::open(db_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) fail("cannot open " + db_path);
  // The database header (fileformat2 "The Database Header").
  uint8_t header[100];
  if (::pread(fd_, header, sizeof header, 0) != ssize_t(sizeof header)) fail("cannot read " + db_path);
  if (std::memcmp(header, "SQLite format 3", 16) != 0) throw std::runtime_error(db_path + ": not a SQLite database");
  uint32_t file_page_size = uint32_t(get_be(header + 16, 2));
  if (file_page_size == 1) file_page_size = 65536;
  if (file_page_size != page_size_ || header[20] != 0) {
    throw std::runtime_error(fmt::format("{}: page size {} with {} reserved bytes, expected {} and none", db_path,
                                         file_page_size, header[20], page_size_));
  }
  change_ = uint32_t(get_be(header + 24, 4));
  uint32_t pages = uint32_t(get_be(header + 28, 4));
  off_t size = ::lseek(fd_, 0, SEEK_END);
  if (size < 0) fail("cannot read " + db_path);
  if (pages == 0 || get_be(header + 92, 4) != change_ || uint64_t(size) != uint64_t(pages) * page_size_) {
    throw std::runtime_error(fmt::format("{}: header says {} pages, the file has {} bytes", db_path, pages, size));
  }
  first_ = next_ = buffer_first_ = pages + 1;
}

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
}

int Writer::add_table(const std::string& name, bool rowid_first) {
  tables_.push_back(Table{});
  tables_.back().name = name;
  tables_.back().rowid_first = rowid_first;
  return int(tables_.size() - 1);
}

void Writer::start_leaf(Table& t) {
  t.page.assign(page_size_, '\0');
  t.cells = 0;
  t.content = page_size_;
}

// The leaf page's header (fileformat2 "B-tree Page Header Format"): a table leaf, no freeblocks,
// its cell count, where its cell content starts (0 stands for 65536), no fragmented bytes.
void Writer::finish_leaf(Table& t) const {
  auto* p = reinterpret_cast<uint8_t*>(t.page.data());
  p[0] = 0x0d;
  put_be(p + 1, 0, 2);
  put_be(p + 3, t.cells, 2);
  put_be(p + 5, t.content == 65536 ? 0 : t.content, 2);
  p[7] = 0;
}

void Writer::put_page(uint32_t page, const std::string& bytes) {
  if (page != buffer_first_ + uint32_t(buffer_.size() / page_size_)) {
    flush();
    buffer_first_ = page;
  }
  buffer_ += bytes;
  if (buffer_.size() >= (size_t(1) << 20)) flush();
}

void Writer::flush() {
  pwrite_all(fd_, buffer_.data(), buffer_.size(), uint64_t(buffer_first_ - 1) * page_size_, path_);
  buffer_first_ += uint32_t(buffer_.size() / page_size_);
  buffer_.clear();
}

bool Writer::add_row(int table, int64_t rowid, const Record& r) {
  Table& t = tables_[size_t(table)];
  if (t.seen && rowid <= t.last_rowid) {
    throw std::runtime_error(
        fmt::format("table {}: row {} after row {} (rows must come in ascending order)", t.name, rowid, t.last_rowid));
  }
  t.seen = true;
  t.last_rowid = rowid;
  size_t payload = r.size();
  if (payload > max_local_) {
    scratch_.resize(payload);
    r.write(reinterpret_cast<uint8_t*>(scratch_.data()));
    pending_.push_back(Pending{table, rowid, scratch_});
    return false;
  }
  // A table leaf cell: the payload's size, the rowid, the payload, written in place.
  size_t cell = varint_size(payload) + varint_size(uint64_t(rowid)) + payload;
  if (t.page.empty()) start_leaf(t);
  if (8 + 2 * (size_t(t.cells) + 1) + cell > t.content) {
    finish_leaf(t);
    put_page(next_, t.page);
    t.leaves.push_back(Child{next_++, t.leaf_max});
    start_leaf(t);
  }
  t.content -= uint32_t(cell);
  auto* p = reinterpret_cast<uint8_t*>(t.page.data());
  uint8_t* c = p + t.content;
  c += put_varint(c, payload);
  c += put_varint(c, uint64_t(rowid));
  r.write(c);
  put_be(p + 8 + 2 * t.cells, t.content, 2);
  ++t.cells;
  t.leaf_max = rowid;
  return true;
}

void Writer::finish(const std::vector<std::pair<std::string, uint32_t>>& roots) {
  // SQLite must not have written the file meanwhile: it ends where it did.
  uint8_t header[100];
  if (::pread(fd_, header, sizeof header, 0) != ssize_t(sizeof header)) fail("cannot read " + path_);
  if (get_be(header + 24, 4) != change_ || get_be(header + 28, 4) != first_ - 1) {
    throw std::runtime_error(path_ + ": SQLite wrote the database while its pages were written");
  }
  std::map<std::string, uint32_t> root_of(roots.begin(), roots.end());
  std::string page(page_size_, '\0');
  for (Table& t : tables_) {
    if (t.leaves.empty() && t.cells == 0) continue;
    auto it = root_of.find(t.name);
    if (it == root_of.end() || it->second < 2) throw std::runtime_error("no root page for table " + t.name);
    uint32_t root = it->second;
    std::vector<Child> level = t.leaves;
    if (t.cells > 0) {
      finish_leaf(t);
      if (level.empty()) {
        // One leaf: it is the table.
        put_page(root, t.page);
        continue;
      }
      put_page(next_, t.page);
      level.push_back(Child{next_++, t.leaf_max});
    }
    // Interior pages, level by level: each holds a cell (child page, its largest rowid) for every
    // child but its last, which is the right-most pointer in its header.
    auto write_interior = [&](size_t s, size_t e, uint32_t at) {
      std::fill(page.begin(), page.end(), '\0');
      auto* p = reinterpret_cast<uint8_t*>(page.data());
      uint32_t content = page_size_;
      for (size_t k = s; k < e; ++k) {
        uint8_t cell[13];
        put_be(cell, level[k].page, 4);
        size_t n = 4 + put_varint(cell + 4, uint64_t(level[k].max_rowid));
        content -= uint32_t(n);
        std::memcpy(p + content, cell, n);
        put_be(p + 12 + 2 * (k - s), content, 2);
      }
      p[0] = 0x05;
      put_be(p + 3, e - s, 2);
      put_be(p + 5, content == 65536 ? 0 : content, 2);
      put_be(p + 8, level[e].page, 4);
      put_page(at, page);
    };
    while (true) {
      size_t used = 12;
      for (size_t k = 0; k + 1 < level.size(); ++k) used += interior_cell(level[k]);
      if (used <= page_size_) {
        write_interior(0, level.size() - 1, root);
        break;
      }
      std::vector<Child> parent;
      for (size_t s = 0; s < level.size();) {
        size_t e = s;
        used = 12;
        while (e + 1 < level.size() && used + interior_cell(level[e]) <= page_size_) used += interior_cell(level[e++]);
        // Never leave a single child for the last page: an interior page needs a cell.
        if (level.size() - (e + 1) == 1 && e >= s + 2) --e;
        write_interior(s, e, next_);
        parent.push_back(Child{next_++, level[e].max_rowid});
        s = e + 1;
      }
      level = std::move(parent);
    }
  }

  flush();
  // The new size, valid because the change counter and version-valid-for number agree; a new
  // change counter also tells SQLite's connection to drop what it cached of the file.
  uint8_t fields[4];
  put_be(fields, change_ + 1, 4);
  pwrite_all(fd_, fields, 4, 24, path_);
  pwrite_all(fd_, fields, 4, 92, path_);
  put_be(fields, next_ - 1, 4);
  pwrite_all(fd_, fields, 4, 28, path_);
  // Closing our descriptor drops every POSIX lock this process holds on the file (fcntl's rule):
  // done here, while SQLite holds none.
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write " + path_);
}

}  // namespace cuprobe::exporter::sqlite_pages
