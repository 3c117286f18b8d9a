// Edits a generated profile in place with one SQL statement (tests that plant what a real export
// may hold). One place for the reproducer tests.
#pragma once
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

namespace testsql {

inline void sql(const std::filesystem::path& file, const std::string& q) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK) << file;
  char* err = nullptr;
  const int rc = sqlite3_exec(db, q.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg << "\n" << q;
}

}  // namespace testsql
