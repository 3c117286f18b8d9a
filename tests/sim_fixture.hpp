// Shared by the generator's tests (test_sim, test_sim_conventions): read back what it wrote.
#pragma once
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "sim.hpp"

namespace simtest {

namespace fs = std::filesystem;
using Rows = std::vector<std::vector<std::string>>;

inline Rows query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << path;
  sqlite3_stmt* st = nullptr;
  Rows out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return out;
  }
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const auto* t = sqlite3_column_text(st, i);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    out.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}
int64_t scalar(const std::string& path, const std::string& sql) { return std::stoll(query(path, sql).at(0).at(0)); }

inline std::vector<std::string> columns(const std::string& path, const std::string& table) {
  std::vector<std::string> c;
  for (auto& r : query(path, "PRAGMA table_info(" + table + ")")) c.push_back(r[1]);
  return c;
}

// One rank's file of a per-rank run.
inline std::string rank_file(const fs::path& dir, int r) { return (dir / ("rank_" + std::to_string(r) + ".sqlite")).string(); }

// Row contents of every table of every rank file (text as SQLite renders it), FNV-1a.
inline uint64_t content_hash(const fs::path& dir, int ranks) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0x1f) * 1099511628211ull;
  };
  for (int r = 0; r < ranks; ++r) {
    const std::string f = rank_file(dir, r);
    for (auto& t : query(f, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) {
      add(t[0]);
      for (auto& row : query(f, "SELECT * FROM " + t[0] + " ORDER BY rowid"))
        for (auto& v : row) add(v);
    }
  }
  return h;
}

inline std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline fs::path tmp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("test_sim_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

inline sim::Options tiny(const fs::path& dir) {
  sim::Options o;
  o.out_dir = dir.string();
  o.layout = topology::ParallelLayout::parse("2x2x2");
  o.hosts = 2;
  o.iterations = 3;
  return o;
}

// Two generated runs of the tiny() shape are the same: truth.json and every rank's kernel rows.
inline void expect_same_run(const fs::path& a, const fs::path& b) {
  EXPECT_EQ(slurp((a / "truth.json").string()), slurp((b / "truth.json").string()));
  for (int r = 0; r < 8; ++r) {
    const std::string f = "rank_" + std::to_string(r) + ".sqlite", q = "SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid";
    EXPECT_EQ(query((a / f).string(), q), query((b / f).string(), q)) << r;
  }
}

struct RankTruth {
  int64_t kernels = 0, nccl = 0, iterations = 0;
};
inline std::map<int, RankTruth> per_rank(const std::string& truth) {
  std::map<int, RankTruth> m;
  std::regex re(R"re("rank": (\d+),[^}]*"kernels": (\d+), "nccl_kernels": (\d+),[^}]*"iterations_written": (\d+))re");
  for (std::sregex_iterator it(truth.begin(), truth.end(), re), end; it != end; ++it)
    m[std::stoi((*it)[1])] = {std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4])};
  return m;
}
inline int64_t clock_offset(const std::string& truth, const std::string& host) {
  std::smatch m;
  std::regex re("\"name\": \"" + host + "\", \"ranks\": \\[[0-9,]*\\], \"clock_offset_ns\": (-?\\d+)");
  EXPECT_TRUE(std::regex_search(truth, m, re)) << host;
  return std::stoll(m[1]);
}

inline const std::string kNcclKernels =
    "SELECT k.start, k.end, k.streamId, k.correlationId, k.globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
    "JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%'";

}  // namespace simtest
