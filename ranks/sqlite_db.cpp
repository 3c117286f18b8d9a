#include "sqlite_db.hpp"

#include <unistd.h>

#include <filesystem>

#include "ranks/nsys_reader.hpp"

namespace ranks::detail {

namespace {
// Percent-encode for a file: URI so that '?', '#' and '%' in names cannot inject URI parameters.
std::string file_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '?' || c == '#' || c == '%' || c < 0x20 || c >= 0x7f) {
      static const char* hex = "0123456789ABCDEF";
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    } else {
      uri += char(c);
    }
  }
  // immutable: no locks, no -wal/-shm files next to someone else's profile.
  return uri + "?mode=ro&immutable=1";
}

std::string describe(int rc, sqlite3* db) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB: return "not a SQLite file";
    case SQLITE_CORRUPT: return "corrupt or truncated SQLite file (" + std::string(db ? sqlite3_errmsg(db) : "") + ")";
    case SQLITE_CANTOPEN: return "cannot open (missing or unreadable)";
    case SQLITE_IOERR: return "I/O error while reading (truncated file?)";
    case SQLITE_NOMEM: return "out of memory";
    default: return db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  }
}
}  // namespace

Database::Database(const std::string& path) : path_(path) {
  // Check before SQLite opens it: a FIFO or device would block or misbehave.
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw ProfileError(path + ": cannot open (missing file or dangling link)");
  if (!std::filesystem::is_regular_file(st)) throw ProfileError(path + ": not a regular file");
  if (::access(path.c_str(), R_OK) != 0) throw ProfileError(path + ": cannot open (permission denied)");
  int rc = sqlite3_open_v2(file_uri(path).c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = describe(rc, db_);
    sqlite3_close(db_);
    db_ = nullptr;
    throw ProfileError(path + ": " + msg);
  }
  // Small page cache: a sequential scan gains nothing from more, and it would count as our memory.
  sqlite3_exec(db_, "PRAGMA cache_size=-2048;", nullptr, nullptr, nullptr);
  Statement s(db_, "SELECT name FROM sqlite_master WHERE type='table'", path_);
  while (s.step()) tables_.emplace(s.text(0));
}

Database::~Database() {
  if (db_) sqlite3_close(db_);
}

void Database::fail(const std::string& problem) const { throw ProfileError(path_ + ": " + problem); }

std::set<std::string> Database::columns(const std::string& table) const {
  std::set<std::string> cols;
  if (!has_table(table)) return cols;
  Statement s(db_, "PRAGMA table_info(\"" + table + "\")", path_);
  while (s.step()) cols.emplace(s.text(1));
  return cols;
}

Statement::Statement(sqlite3* db, const std::string& sql, const std::string& file) : file_(file) {
  int rc = sqlite3_prepare_v2(db, sql.c_str(), int(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = describe(rc, db);
    sqlite3_finalize(stmt_);
    throw ProfileError(file + ": " + msg);
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw ProfileError(file_ + ": " + describe(rc, sqlite3_db_handle(stmt_)));
}

std::string_view Statement::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (!p) return {};
  return {reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(stmt_, col))};
}

std::string col_or(const std::set<std::string>& cols, const std::string& col, const std::string& fallback) {
  return cols.count(col) ? "\"" + col + "\"" : fallback;
}

}  // namespace ranks::detail
