// Minimal read-only SQLite access for the nsys reader (internal to ranks/).
#pragma once
#include <sqlite3.h>

#include <algorithm>
#include <bit>
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
  std::string_view blob(int col) const;  // bytes of a BLOB (or TEXT) value; empty for NULL

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

// Open-addressing map from an untrusted id to a uint32. nsys ids are sparse (a real export: 126
// strings up to id 3,436,172) and hostile ones arbitrary (id 2^27 cost 4.7 GB when tables were
// indexed by id: repro D7): memory follows the entries, never the largest id.
class IdMap {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  uint32_t find(int64_t key) const {
    if (key == kEmpty) return min_key_val_;
    if (slots_.empty()) return kAbsent;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return slots_[i].val;
      if (slots_[i].key == kEmpty) return kAbsent;
    }
  }
  // The value of `key` (any int64), inserted as kAbsent when new.
  uint32_t& at(int64_t key) {
    if (key == kEmpty) {  // the empty-slot marker is a possible key too: kept beside the table
      if (!has_min_key_) has_min_key_ = true, ++used_;
      return min_key_val_;
    }
    if (2 * (used_ + 1) > slots_.size()) grow();
    size_t i = home(key);
    for (; slots_[i].key != kEmpty; i = (i + 1) & mask_)
      if (slots_[i].key == key) return slots_[i].val;
    ++used_;
    slots_[i] = {key, kAbsent};
    return slots_[i].val;
  }
  size_t size() const { return used_; }

 private:
  static constexpr int64_t kEmpty = INT64_MIN;
  struct Slot {
    int64_t key = kEmpty;
    uint32_t val = kAbsent;
  };
  size_t home(int64_t key) const { return size_t((uint64_t(key) * 0x9E3779B97F4A7C15ull) >> shift_); }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t cap = std::max<size_t>(16, old.size() * 2);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    shift_ = 64 - std::countr_zero(cap);
    for (const Slot& s : old)
      if (s.key != kEmpty) {
        size_t i = home(s.key);
        while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
        slots_[i] = s;
      }
  }
  std::vector<Slot> slots_;
  uint32_t min_key_val_ = kAbsent;  // the value of key INT64_MIN (kEmpty)
  bool has_min_key_ = false;
  size_t used_ = 0, mask_ = 0;
  int shift_ = 64;
};

// StringIds(id, value): the text of each id, looked up by id (no order or density assumed).
class StringIds {
 public:
  explicit StringIds(const Database& db);
  // The text of `id`, or nullptr when StringIds has no such id.
  const std::string* find(int64_t id) const {
    const uint32_t at = id < 0 ? IdMap::kAbsent : index_.find(id);
    return at == IdMap::kAbsent ? nullptr : &text_[at];
  }
  std::string_view get(int64_t id) const {
    const std::string* t = find(id);
    return t ? std::string_view(*t) : std::string_view();
  }

 private:
  std::vector<std::string> text_;
  IdMap index_;  // id -> position in text_
};

// "col" when the table has it, else "fallback" (a SQL literal such as NULL or 0).
std::string col_or(const std::set<std::string>& cols, const std::string& col, const std::string& fallback);

}  // namespace ranks::detail
