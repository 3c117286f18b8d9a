// Minimal read-only SQLite access for the nsys reader (internal to ranks/).
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ranks::detail {

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& file);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool step();  // true while a row is available; throws ProfileError on corruption
  int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string_view text(int col) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  const std::string& file_;
};

class Database {
 public:
  explicit Database(const std::string& path);  // read-only, immutable; throws ProfileError
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  bool has_table(const std::string& name) const { return tables_.count(name) != 0; }
  // Column names of a table (empty if the table is absent).
  std::set<std::string> columns(const std::string& table) const;
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::set<std::string> tables_;
};

// "col" when the table has it, else "fallback" (a SQL literal such as NULL or 0).
std::string col_or(const std::set<std::string>& cols, const std::string& col, const std::string& fallback);

}  // namespace ranks::detail
