// The statements that follow from the SQLite export's declared tables (sqlite_schema.h).
#include "export/sqlite_schema.h"

namespace cuprobe::exporter::sqlite_schema {

std::string create_statements(bool temporary) {
  std::string out;
  for (const Table& t : kTables) {
    if (temporary && t.large) continue;
    out += temporary ? "CREATE TEMP TABLE " : "CREATE TABLE ";
    out += t.name;
    out += " (";
    for (size_t c = 0; c < t.count; ++c) {
      if (c) out += ", ";
      out += t.columns[c].name;
      out += ' ';
      out += t.columns[c].type;
    }
    out += ')';
    out += t.options;
    out += ";\n";
  }
  return out;
}

std::string insert_statement(const Table& t, size_t rows, const char* prefix) {
  std::string row = "(?";
  for (size_t c = 1; c < t.count; ++c) row += ",?";
  row += ")";
  std::string out = std::string("INSERT INTO ") + prefix + t.name + " VALUES " + row;
  for (size_t r = 1; r < rows; ++r) out += "," + row;
  return out;
}

const Table* table_named(std::string_view name) {
  for (const Table& t : kTables) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace cuprobe::exporter::sqlite_schema
