// The largest tables of the SQLite export written as b-tree pages directly, in SQLite's documented
// file format (https://www.sqlite.org/fileformat2.html, "B-tree Pages" and "Record Format"),
// instead of row by row through SQL: SQLite spends 600-750 ns inserting one narrow row on the
// reference machine (bench/sqlite_rows), most of it in its bytecode engine and the b-tree search
// for the insert position; building the same leaf cells here costs a small fraction of that.
//
// How it fits with SQLite: SQLite creates the database with every table (each large table gets
// an empty root page) and closes its transaction; the database then ends at a known page. While
// the trace is walked, SQLite writes the small tables into temporary tables of its own (so it
// never writes the database file meanwhile), and this writer encodes the large tables' rows as
// records in rowid order, packs them into leaf pages and writes each full page after the last
// one, straight into the database file (leaf pages of a table b-tree hold no page numbers, so
// pages of several tables can interleave). finish() writes the last leaves, builds the interior
// pages bottom-up, writes each table's top page into the root page SQLite gave it, and updates
// the header's page count and change counter (which tells SQLite's connection that the file
// changed). SQLite then copies its temporary tables in and builds the indexes; the file is an
// ordinary database that `PRAGMA integrity_check` accepts (tests/export/sqlite_test.cpp).
//
// What this writer does not do: overflow pages. A row whose record does not fit in a leaf page
// (never for these tables in practice; a damaged trace might have a huge knob string) is handed
// back to the caller, which inserts it through SQL after append() (sqlite.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace cuprobe::exporter::sqlite_pages {

// One row's record: column values in order, encoded as SQLite stores them (serial types in a
// header, then the values big-endian).
class Record {
 public:
  static constexpr size_t kMaxColumns = 24;
  Record() : body_(256, '\0') {}
  void clear() {
    types_size_ = 0;
    columns_ = 0;
    body_size_ = 0;
  }
  void null() { add_type(0); }
  void integer(int64_t v) {
    // The smallest serial type that holds v (fileformat2 "Record Format"): 8 and 9 are the
    // constants 0 and 1 (schema format 4, which SQLite creates); 1-6 hold 1, 2, 3, 4, 6 and 8 bytes.
    if (uint64_t(v) <= 1) {
      add_type(8 + uint64_t(v));
      return;
    }
    uint64_t magnitude = v < 0 ? ~uint64_t(v) : uint64_t(v);
    size_t bytes = size_t(64 - __builtin_clzll(magnitude | 1)) / 8 + 1;  // with the sign bit
    static constexpr uint8_t kType[9] = {0, 1, 2, 3, 4, 5, 5, 6, 6};
    static constexpr uint8_t kSize[7] = {0, 1, 2, 3, 4, 6, 8};
    uint8_t type = kType[bytes];
    add_type(type);
    size_t n = kSize[type];
    uint8_t* b = reserve(n);
    for (size_t i = 0; i < n; ++i) b[i] = uint8_t(uint64_t(v) >> (8 * (n - 1 - i)));
    body_size_ += n;
  }
  void real(double v);
  void text(const char* s, size_t n);
  // The record's size, and its bytes (header, then body) written to `out` (size() bytes).
  size_t size() const { return header_size() + body_size_; }
  void write(uint8_t* out) const;

 private:
  void add_type(uint64_t type) {
    if (columns_ == kMaxColumns) too_many();
    ++columns_;
    if (type <= 0x7f) {
      types_[types_size_++] = uint8_t(type);
    } else {
      add_long_type(type);
    }
  }
  void add_long_type(uint64_t type);
  [[noreturn]] static void too_many();
  uint8_t* reserve(size_t n) {
    if (body_size_ + n > body_.size()) body_.resize(std::max(body_.size() * 2, body_size_ + n));
    return reinterpret_cast<uint8_t*>(body_.data()) + body_size_;
  }
  // The header's size counts its own varint (one byte up to 127, two above).
  size_t header_size() const { return types_size_ + 1 <= 0x7f ? types_size_ + 1 : types_size_ + 2; }
  uint8_t types_[kMaxColumns * 9];  // the header's serial types, as varints
  size_t types_size_ = 0, columns_ = 0, body_size_ = 0;
  std::string body_;
};

// A value of a record, decoded (for the rows handed back to SQL).
struct Value {
  enum Type : uint8_t { kInt, kNull, kReal, kText, kBlob } type = kInt;
  int64_t i = 0;
  double d = 0;
  std::string_view s;  // into the record
};
std::vector<Value> decode(const std::string& record);

// The pages of several tables, written into the database file after its last page.
class Writer {
 public:
  // `db_path`: a database SQLite has created, committed and holds no lock on; the writer opens it
  // and reads where it ends. Throws std::runtime_error.
  Writer(const std::string& db_path, uint32_t page_size);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // A table whose rows come in ascending rowid order; returns its handle. `rowid_first`: its first
  // column is its INTEGER PRIMARY KEY (stored as NULL in the record, the rowid holds it).
  int add_table(const std::string& name, bool rowid_first);
  // Appends a row. False when the record is too large for a leaf page: it is kept in pending().
  // Throws std::runtime_error when rowids do not ascend, or the file cannot be written.
  bool add_row(int table, int64_t rowid, const Record& r);
  // The rows add_row refused, in order: their table, rowid and record.
  struct Pending {
    int table;
    int64_t rowid;
    std::string record;
  };
  const std::vector<Pending>& pending() const { return pending_; }
  const std::string& table_name(int table) const { return tables_[size_t(table)].name; }
  bool rowid_first(int table) const { return tables_[size_t(table)].rowid_first; }

  // After the last row, while SQLite holds no lock on the file: the last leaves, the interior
  // pages, the root pages SQLite allocated (by table name, `roots`) and the header; then closes
  // the file. Throws std::runtime_error.
  void finish(const std::vector<std::pair<std::string, uint32_t>>& roots);

 private:
  struct Child {
    uint32_t page;
    int64_t max_rowid;
  };
  struct Table {
    std::string name;
    bool rowid_first = false;
    int64_t last_rowid = 0;  // of the last row given, in a page or not
    bool seen = false;
    int64_t leaf_max = 0;    // the largest rowid in the leaf being filled
    std::vector<Child> leaves;  // written
    std::string page;           // the leaf being filled
    uint32_t cells = 0;
    uint32_t content = 0;       // where its cell content starts
  };
  void start_leaf(Table& t);
  void finish_leaf(Table& t) const;
  // Page `page` goes into the file (through a buffer of consecutive pages).
  void put_page(uint32_t page, const std::string& bytes);
  void flush();

  std::string path_;
  int fd_ = -1;
  uint32_t page_size_;
  uint32_t max_local_;  // the largest payload a table leaf cell holds without overflow
  uint32_t first_ = 0;  // the first page after SQLite's
  uint32_t next_ = 0;   // the next page to write
  uint32_t change_ = 0;  // the header's change counter when opened
  std::string buffer_;  // pages from buffer_first_ on, not yet written
  uint32_t buffer_first_ = 0;
  std::vector<Table> tables_;
  std::vector<Pending> pending_;
  std::string scratch_;
};

}  // namespace cuprobe::exporter::sqlite_pages
