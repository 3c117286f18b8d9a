#include "sqlite_db.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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
// The file is opened immutable (no locks, nothing written beside someone else's profile), which
// also makes SQLite ignore a rollback journal and a write-ahead log: a copy taken while `nsys
// export` was writing would be read half-way through a transaction (repro N7). So an unfinished
// write beside the file is refused: a hot journal (non-empty, starting with the journal magic;
// sqlite.org/fileformat2.html 4.1: a zeroed header is a finished one) or a non-empty -wal holding
// commits not yet in the file (section 4.3; SQLite opened normally applies one even beside a file
// whose header says rollback mode, so the header is no excuse).
void check_unfinished(const std::string& path) {
  static const unsigned char magic[8] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7};
  const std::string journal = path + "-journal", wal = path + "-wal";
  const std::string name = std::filesystem::path(path).filename().string();
  int fd = ::open(journal.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) {
    unsigned char h[8] = {};
    const bool hot = ::pread(fd, h, sizeof h, 0) == ssize_t(sizeof h) && std::memcmp(h, magic, sizeof h) == 0;
    ::close(fd);
    if (hot)
      throw ProfileError(path + ": an unfinished write: its rollback journal " + name +
                         "-journal is beside it (copied while nsys export was writing?); export it again");
  } else if (errno != ENOENT) {
    throw ProfileError(path + ": cannot tell whether a write was unfinished: " + name + "-journal is unreadable");
  }
  struct stat st {};
  if (::stat(wal.c_str(), &st) == 0 && st.st_size > 0)
    throw ProfileError(path + ": commits not yet in the file: its write-ahead log " + name +
                       "-wal is beside it; checkpoint it (sqlite3 FILE 'PRAGMA wal_checkpoint') or export again");
}

// SQLite reads a missing tail as zeros (a torn copy then shows phantom rows, repro D8): compare
// the size the header records (page size x page count, sqlite.org/fileformat2.html 1.3) with the
// file's. The count is valid only when the change counter (24) equals version-valid-for (92).
void check_header(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;  // SQLite will say why
  unsigned char h[100];
  ssize_t got = ::pread(fd, h, sizeof h, 0);
  struct stat st {};
  const bool sized = ::fstat(fd, &st) == 0;
  ::close(fd);
  static const char magic[] = "SQLite format 3";  // with its NUL: 16 bytes
  if (got < 16 || std::memcmp(h, magic, 16) != 0 || !sized) return;  // not SQLite: it says so
  if (got < 100) throw ProfileError(path + ": truncated: the SQLite header is incomplete (" + std::to_string(got) + " bytes)");
  auto be32 = [&](int o) { return uint32_t(h[o]) << 24 | uint32_t(h[o + 1]) << 16 | uint32_t(h[o + 2]) << 8 | h[o + 3]; };
  const uint32_t raw_page = uint32_t(h[16]) << 8 | h[17];
  const int64_t page = raw_page == 1 ? 65536 : raw_page;
  const int64_t pages = be32(28);
  check_unfinished(path);
  if (pages == 0 || be32(24) != be32(92) || page < 512 || (page & (page - 1))) return;
  const int64_t want = page * pages;
  if (int64_t(st.st_size) < want)
    throw ProfileError(path + ": truncated: the SQLite header says " + std::to_string(want) + " bytes, the file has " +
                       std::to_string(int64_t(st.st_size)));
}

}  // namespace

Database::Database(const std::string& path) : path_(path) {
  // Check before SQLite opens it: a FIFO or device would block or misbehave.
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw ProfileError(path + ": cannot open (missing file or dangling link)");
  if (!std::filesystem::is_regular_file(st)) throw ProfileError(path + ": not a regular file");
  if (::access(path.c_str(), R_OK) != 0) throw ProfileError(path + ": cannot open (permission denied)");
  check_header(path);
  int rc = sqlite3_open_v2(file_uri(path).c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = describe(rc, db_);
    sqlite3_close(db_);
    db_ = nullptr;
    throw ProfileError(path + ": " + msg);
  }
  // The destructor does not run when the constructor throws: close here, or every unreadable
  // profile keeps a descriptor (1,100 of them exhausted ulimit -n: repro D6).
  try {
    // Small page cache: a sequential scan gains nothing from more, and it would count as our memory.
    sqlite3_exec(db_, "PRAGMA cache_size=-2048;", nullptr, nullptr, nullptr);
    Statement s(db_, "SELECT name FROM sqlite_master WHERE type='table'", path_);
    while (s.step()) tables_.emplace(s.text(0));
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
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

std::string_view Statement::blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  if (!p) return {};
  return {static_cast<const char*>(p), size_t(sqlite3_column_bytes(stmt_, col))};
}

std::string_view Statement::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (!p) return {};
  return {reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(stmt_, col))};
}

StringIds::StringIds(const Database& db) {
  Statement s(db.handle(), "SELECT id, value FROM StringIds", db.path());
  while (s.step()) {
    const int64_t id = s.i64(0);
    if (id < 0) continue;
    uint32_t& at = index_.at(id);  // a repeated id (no PRIMARY KEY in a hostile file): the last wins
    if (at == IdMap::kAbsent) at = uint32_t(text_.size()), text_.emplace_back();
    text_[at] = std::string(s.text(1));
  }
}

std::string col_or(const std::set<std::string>& cols, const std::string& col, const std::string& fallback) {
  return cols.count(col) ? "\"" + col + "\"" : fallback;
}

}  // namespace ranks::detail
