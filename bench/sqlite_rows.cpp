// What SQLite itself costs per row, for comparison with `cuprobe export --format sqlite`: inserts
// ROWS rows shaped like the export's `calls` table (an integer key and ten integers) into a new
// database with the export's settings (one transaction, journal and sync off, 16 KiB pages), the
// way the export does (64 rows to a prepared statement), and prints rows per second. No trace is
// read: this is the floor the export's speed is bounded by.
//
// Usage: sqlite_rows FILE [ROWS]
#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sqlite_rows FILE [ROWS]\n");
    return 2;
  }
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 2000000;
  constexpr int kColumns = 11, kBatch = 64;
  std::remove(argv[1]);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::fprintf(stderr, "sqlite_rows: cannot create %s: %s\n", argv[1], sqlite3_errmsg(db));
    return 1;
  }
  sqlite3_exec(db,
               "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
               "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-65536; "
               "CREATE TABLE calls (id INTEGER PRIMARY KEY, process_id INTEGER, tid INTEGER, api_id INTEGER, "
               "ts_ns INTEGER, dur_ns INTEGER, device INTEGER, stream INTEGER, ret INTEGER, stack_id INTEGER, "
               "flags INTEGER); BEGIN",
               nullptr, nullptr, nullptr);
  std::string row = "(?,?,?,?,?,?,?,?,?,?,?)", sql = "INSERT INTO calls VALUES " + row;
  for (int k = 1; k < kBatch; ++k) sql += "," + row;
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  auto start = std::chrono::steady_clock::now();
  int64_t done = 0;
  for (; done + kBatch <= rows; done += kBatch) {
    for (int k = 0; k < kBatch; ++k) {
      int64_t id = done + k + 1;
      // Values of realistic sizes: a wall-clock timestamp, small ids, short durations.
      int64_t values[kColumns] = {id, 1, 4242, id % 40, 1796000000000000000 + id * 500, 300 + id % 97, 0, 7, 0, 0, 0};
      for (int c = 0; c < kColumns; ++c) sqlite3_bind_int64(stmt, k * kColumns + c + 1, values[c]);
    }
    if (sqlite3_step(stmt) != SQLITE_DONE) {
      std::fprintf(stderr, "sqlite_rows: %s\n", sqlite3_errmsg(db));
      return 1;
    }
    sqlite3_reset(stmt);
  }
  sqlite3_finalize(stmt);
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("SQLite alone: %lld rows in %.2f s: %.2f M rows/s (%.0f ns a row)\n", static_cast<long long>(done), s,
              double(done) / s / 1e6, s * 1e9 / double(done));
  return 0;
}
