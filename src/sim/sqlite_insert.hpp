// Prepared INSERTs for the nsys writer: chosen columns of one table, and batched integer rows.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace sim {

inline void check_sqlite(int rc, sqlite3* db, const std::string& what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    throw std::runtime_error(fmt::format("straggler-sim: sqlite {}: {}", what, sqlite3_errmsg(db)));
}

// INSERT of chosen columns: values are ":param" placeholders or SQL literals; columns the table
// lacks (older schema) are dropped, so binding their parameter is a harmless no-op.
class Insert {
 public:
  Insert(sqlite3* db, const std::string& table, const std::vector<std::pair<std::string, std::string>>& cols)
      : db_(db), st_(prepare_rows(db, table, cols, 1)) {}
  // "INSERT ... VALUES (row 0), (row 1), ...": parameter ":x" of row t is renamed ":x_t" (t > 0).
  static sqlite3_stmt* prepare_rows(sqlite3* db, const std::string& table,
                                    const std::vector<std::pair<std::string, std::string>>& cols, int n) {
    std::set<std::string> have;
    sqlite3_stmt* info = nullptr;
    check_sqlite(sqlite3_prepare_v2(db, ("PRAGMA table_info(" + table + ")").c_str(), -1, &info, nullptr), db, table);
    while (sqlite3_step(info) == SQLITE_ROW) have.insert(reinterpret_cast<const char*>(sqlite3_column_text(info, 1)));
    sqlite3_finalize(info);
    std::string names, values;
    for (auto& [c, v] : cols)
      if (have.count(c)) names += (names.empty() ? "" : ",") + c;
    for (int t = 0; t < n; ++t) {
      std::string row;
      for (auto& [c, v] : cols)
        if (have.count(c)) row += (row.empty() ? "" : ",") + (t && v[0] == ':' ? v + "_" + std::to_string(t) : v);
      values += (t ? ",(" : "(") + row + ")";
    }
    sqlite3_stmt* st = nullptr;
    check_sqlite(sqlite3_prepare_v2(db, fmt::format("INSERT INTO {} ({}) VALUES {}", table, names, values).c_str(), -1, &st,
                             nullptr), db, table);
    return st;
  }
  int params() const { return sqlite3_bind_parameter_count(st_); }
  ~Insert() { sqlite3_finalize(st_); }
  Insert(const Insert&) = delete;
  Insert& operator=(const Insert&) = delete;
  int p(const char* name) const { return sqlite3_bind_parameter_index(st_, name); }
  void i(int idx, int64_t v) { if (idx) sqlite3_bind_int64(st_, idx, v); }
  void null(int idx) { if (idx) sqlite3_bind_null(st_, idx); }
  void t(int idx, const std::string& v) { if (idx) sqlite3_bind_text(st_, idx, v.c_str(), int(v.size()), SQLITE_TRANSIENT); }
  void blob(int idx, const std::string& v) { if (idx) sqlite3_bind_blob(st_, idx, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void run() {
    check_sqlite(sqlite3_step(st_), db_, "insert");
    sqlite3_reset(st_);
    ++rows;
  }
  int64_t rows = 0;

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

// Integer-only INSERT of many rows per statement: amortises SQLite's per-statement cost over
// `batch` rows (the bulk tables hold millions of rows). Rows are staged in a shadow buffer.
class BatchInsert {
 public:
  BatchInsert(sqlite3* db, const std::string& table, const std::vector<std::pair<std::string, std::string>>& cols,
              int batch = 64)
      : db_(db), single_(db, table, cols), batch_(batch) {
    k_ = single_.params();
    bulk_ = Insert::prepare_rows(db, table, cols, batch);
    row_.assign(k_, 0);
    buf_.reserve(size_t(k_) * batch);
  }
  ~BatchInsert() { sqlite3_finalize(bulk_); }
  int p(const char* name) const { return single_.p(name) - 1; }
  void set(int off, int64_t v) { if (off >= 0) row_[off] = v; }
  void run() {
    buf_.insert(buf_.end(), row_.begin(), row_.end());
    ++rows;
    if (int64_t(buf_.size()) < int64_t(k_) * batch_) return;
    for (int i = 0; i < k_ * batch_; ++i) sqlite3_bind_int64(bulk_, i + 1, buf_[i]);
    check_sqlite(sqlite3_step(bulk_), db_, "insert");
    sqlite3_reset(bulk_);
    buf_.clear();
  }
  void flush() {
    for (size_t r = 0; r < buf_.size(); r += k_) {
      for (int i = 0; i < k_; ++i) single_.i(i + 1, buf_[r + i]);
      single_.run();
    }
    buf_.clear();
  }
  int64_t rows = 0;

 private:
  sqlite3* db_;
  Insert single_;
  sqlite3_stmt* bulk_ = nullptr;
  int batch_, k_ = 0;
  std::vector<int64_t> row_, buf_;
};

}  // namespace sim
