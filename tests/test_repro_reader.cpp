// Issue 8, reader side: the defect reproducers D3 (StringTable copies), D6 (descriptor leak on
// unreadable files), D7 (memory by the largest string id), D8 (truncated or corrupted files
// renumbered) and D10 (times near the int64 limits), and reading unordered exports. Inputs from
// ../shared/data/repro where they exist (skipped when absent), else generated runs edited with
// SQLite. Under the sanitizer build (scripts/test.sh --sanitize) any report fails them.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "read_annotated.hpp"
#include "ranks/nsys_reader.hpp"
#include "shell.hpp"
#include "sqlite_edit.hpp"

namespace fs = std::filesystem;
using ranks::RankTimeline;

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN, kShared = SS_SHARED_DIR;

fs::path temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("ss-repro-reader-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p;
}

using testsql::sql;

// A small generated run (2 ranks on one host unless told), once per name.
fs::path generate(const std::string& name, const std::string& args = "--layout 1x1x2 --hosts 1 --iterations 6") {
  const fs::path dir = temp(name);
  int st = 0;
  const auto out = testsh::sh(kSim + " " + dir.string() + " " + args + " --seed 4", &st);
  EXPECT_EQ(st, 0) << out;
  return dir;
}

// The repro folder, or "" (the test skips) when SS_SHARED_DIR does not hold it.
std::string repro(const std::string& name) {
  const fs::path p = fs::path(kShared) / "data/repro" / name;
  return fs::exists(p / "rank_0.sqlite") ? p.string() : "";
}
#define REQUIRE_REPRO(var, name)                                                                   \
  const std::string var = repro(name);                                                             \
  if (var.empty()) GTEST_SKIP() << "no " << kShared << "/data/repro/" << name << " (set SS_SHARED_DIR)"

// straggler-scan on `dir`, outputs beside it; a crash or an internal error fails.
testsh::Result scan(const fs::path& dir, const std::string& tag, const std::string& prefix = "") {
  const fs::path out = temp("out-" + tag);
  fs::create_directories(out);
  auto r = testsh::sh(prefix + kScan + " " + dir.string() + " -o " + (out / "s.h5").string() + " --summary " +
                      (out / "s.json").string());
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
  EXPECT_NE(r.status, 1) << r.out;
  fs::remove_all(out);
  return r;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// ------------------------------------------------------------------------- D3: StringTable copies

// Every name of a copy is found again by its own index (views into a freed original would be a
// heap-use-after-free under AddressSanitizer, and a wrong id without it).
void expect_copies_index_themselves(std::vector<RankTimeline> tls) {
  std::vector<RankTimeline> copies(tls.begin(), tls.end());
  tls.clear();  // the originals' strings are freed
  for (auto& tl : copies)
    for (uint32_t id = 0; id < tl.names.size(); ++id) {
      const std::string s = tl.names.str(id);
      EXPECT_EQ(tl.names.intern(s), id) << s;
    }
}

TEST(ReproD3, GpidNullSomeReadsAndCopiesCleanly) {
  REQUIRE_REPRO(dir, "gpid_null_some");
  auto tls = read_annotated(dir + "/rank_0.sqlite");  // two processes: growing the process list moved tables
  ASSERT_EQ(tls.size(), 2u);
  expect_copies_index_themselves(std::move(tls));
  // The file holds a phantom pid-0 process beside the rank: reported, and rank_1 still analysed.
  auto r = scan(dir, "d3");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 rank from 1 file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank_0.sqlite: named for rank 0 but holds 2 rank processes (pids 0, 1000)"), std::string::npos)
      << r.out;
}

TEST(ReproD3, NullGlobalPidRowsMadeFromAGeneratedRun) {
  const fs::path dir = generate("d3");
  sql(dir / "rank_0.sqlite", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL WHERE rowid % 7 = 0");
  auto tls = read_annotated((dir / "rank_0.sqlite").string());
  ASSERT_EQ(tls.size(), 2u);
  expect_copies_index_themselves(std::move(tls));
  fs::remove_all(dir);
}

// ------------------------------------------------------------------------- D6: descriptor leak

TEST(ReproD6, ManyUnreadableFilesLeakNoDescriptor) {
  const fs::path run = generate("d6-src");
  const fs::path dir = temp("d6");
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  for (int r = 2; r < 1102; ++r) std::ofstream(dir / "a" / ("rank_" + std::to_string(r) + ".sqlite")) << "not sqlite\n";
  for (int r = 0; r < 2; ++r)  // read last (path order): after 1,100 failed opens
    fs::copy_file(run / ("rank_" + std::to_string(r) + ".sqlite"), dir / "b" / ("rank_" + std::to_string(r) + ".sqlite"));
  auto r = scan(dir, "d6", "sh -c 'ulimit -n 1024 && exec \"$0\" \"$@\"' ");
  EXPECT_EQ(r.status, 0) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("2 ranks from 2 files"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_EQ(count(r.out, "straggler-scan: " + (dir / "a").string() + "/rank_"), 1100u) << r.out.substr(0, 2000);
  EXPECT_GE(count(r.out, ".sqlite: not a SQLite file"), 1100u) << r.out.substr(0, 2000);  // listed, not lost
  fs::remove_all(dir);
  fs::remove_all(run);
}

// ------------------------------------------------------------------------- D7: sparse string ids

TEST(ReproD7, HugeStringIdAndKernelsOverManyPidsStaySmall) {
  const fs::path dir = generate("d7", "--layout 1x1x1 --hosts 1 --iterations 40");
  const fs::path f = dir / "rank_0.sqlite";
  sql(f, "INSERT INTO StringIds (id, value) VALUES (134217728, 'far away');"
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = (1000 + rowid % 300) * 16777216");
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
#if !defined(__SANITIZE_ADDRESS__)
    rlimit as{size_t(2) << 30, size_t(2) << 30};  // the old reader needed 4.7 GB: fail, do not swap
    ::setrlimit(RLIMIT_AS, &as);
#endif
    try {
      ::_exit(read_annotated(f.string()).size() == 300 ? 0 : 3);
    } catch (...) {
      ::_exit(4);
    }
  }
  int status = 0;
  rusage ru{};
  ASSERT_EQ(::wait4(child, &status, 0, &ru), child);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_LT(ru.ru_maxrss, 300 * 1024) << "peak RSS in KB";
  EXPECT_LT(seconds, 30.0);
  fs::remove_all(dir);
}

// ------------------------------------------------------------------------- D8: torn and phantom files

TEST(ReproD8, TruncatedTailIsReportedAndTheHealthyRankAnalysed) {
  REQUIRE_REPRO(dir, "truncated_tail");
  auto r = scan(dir, "d8-trunc");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rank_0.sqlite: truncated: the SQLite header says 204800 bytes, the file has 204595\n"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 rank from 1 file"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("already claimed"), std::string::npos) << r.out;
}

TEST(ReproD8, BitflipPhantomRankIsReportedAndTheHealthyRankAnalysed) {
  REQUIRE_REPRO(dir, "bitflip_phantom_rank");
  auto r = scan(dir, "d8-flip");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rank_0.sqlite: named for rank 0 but holds 3 rank processes (pids 0, 872, 1000)"),
            std::string::npos) << r.out;
  // One error line for the file and one entry in the report's list of skipped profiles, not one
  // of each per process it holds.
  size_t lines = 0;
  for (size_t at = r.out.find("named for rank 0"); at != std::string::npos; at = r.out.find("named for rank 0", at + 1)) ++lines;
  EXPECT_EQ(lines, 2u) << r.out;
  EXPECT_NE(r.out.find("1 rank from 1 file"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("already claimed"), std::string::npos) << r.out;
}

TEST(ReproD8, MadeTruncationAndPhantomProcess) {
  const fs::path dir = generate("d8");
  const fs::path f = dir / "rank_0.sqlite";
  const auto size = fs::file_size(f);
  fs::resize_file(f, size - 205);
  auto r = scan(dir, "d8-made-trunc");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rank_0.sqlite: truncated: the SQLite header says " + std::to_string(size) +
                       " bytes, the file has " + std::to_string(size - 205)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 rank from 1 file"), std::string::npos) << r.out;
  fs::remove_all(dir);

  const fs::path dir2 = generate("d8-phantom");
  sql(dir2 / "rank_0.sqlite", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = 0 WHERE rowid = 7");
  r = scan(dir2, "d8-made-phantom");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rank_0.sqlite: named for rank 0 but holds 2 rank processes (pids 0, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 rank from 1 file"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("already claimed"), std::string::npos) << r.out;
  fs::remove_all(dir2);
}

// ------------------------------------------------------------------------- D10: times near the limits

void expect_contract(const RankTimeline& tl) {
  auto check = [&](const std::vector<int64_t>& s, const std::vector<int64_t>& e, const char* what) {
    for (size_t i = 0; i < s.size(); ++i) {
      ASSERT_TRUE(ranks::in_time_range(s[i]) && ranks::in_time_range(e[i]) && e[i] >= s[i]) << what << " row " << i;
    }
  };
  check(tl.kernels.start, tl.kernels.end, "kernel");
  check(tl.copies.start, tl.copies.end, "copy");
  check(tl.api.start, tl.api.end, "api");
  check(tl.nvtx.start, tl.nvtx.end, "nvtx");
  for (int64_t t : tl.kernels.launch) ASSERT_TRUE(t == ranks::kNoTime || ranks::in_time_range(t));
  for (const auto& p : tl.pending_nccl) ASSERT_TRUE(ranks::in_time_range(p.launch));
  for (const auto& u : tl.unfinished_launches) ASSERT_TRUE(ranks::in_time_range(u.launch));
  EXPECT_TRUE(ranks::in_time_range(tl.capture_start) && ranks::in_time_range(tl.capture_end));
  EXPECT_TRUE(ranks::in_time_range(tl.utc_epoch_ns));
}

TEST(ReproD10, TimesNearTheInt64LimitsAreDroppedWithOneWarning) {
  const fs::path dir = generate("d10");
  const fs::path f = dir / "rank_0.sqlite";
  sql(f, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775807, end = -9223372036854775000 WHERE rowid = 5;"
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 9223372036854775000, end = 9223372036854775807 WHERE rowid = 9;"
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 WHERE rowid = 11;"
         "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = 9223372036854775807 WHERE rowid IN (SELECT rowid FROM "
         "CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN (SELECT id FROM StringIds WHERE value LIKE 'cu%Launch%') "
         "ORDER BY rowid LIMIT 1 OFFSET 20);"
         "UPDATE NVTX_EVENTS SET start = -9223372036854775807 WHERE rowid IN (SELECT rowid FROM NVTX_EVENTS "
         "WHERE end IS NOT NULL AND eventType IN (59, 60) ORDER BY rowid LIMIT 1 OFFSET 3);"
         "UPDATE ANALYSIS_DETAILS SET stopTime = 9223372036854775807;"
         "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 9223372036854775807");
  auto tls = read_annotated(f.string());
  ASSERT_EQ(tls.size(), 1u);
  expect_contract(tls[0]);
  ASSERT_FALSE(tls[0].warnings.empty());
  // A kernel that starts in range and ends beyond it ran: kept, its duration repaired (said apart).
  EXPECT_EQ(tls[0].warnings[0], "4 rows with times outside +-2^61 ns dropped (kernels 2, runtime 1, NVTX 1, copies 0)");
  bool repaired = false;
  for (const auto& w : tls[0].warnings) repaired |= w.rfind("1 kernel row with an impossible duration", 0) == 0;
  EXPECT_TRUE(repaired);
  EXPECT_EQ(tls[0].utc_epoch_ns, 0);
  auto r = scan(dir, "d10");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + f.string() + ": 4 rows with times outside +-2^61 ns dropped"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 ranks from 2 files"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("runtime error"), std::string::npos) << r.out;  // UBSan, in the sanitizer build

  // Nothing usable left: the file is rejected, the other rank analysed.
  sql(f, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775807");
  EXPECT_THROW(read_annotated(f.string()), ranks::ProfileError);
  r = scan(dir, "d10-none");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rank_0.sqlite: no usable kernel: all "), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// ------------------------------------------------------------------------- unordered exports

// nsys promises no row order: a shuffled export reads as the same timeline (rows compared as
// sets, since rows that start and end together may come in either order).
TEST(UnorderedExport, ShuffledRowsReadTheSame) {
  const std::string args = "--layout 2x1x2 --hosts 1 --iterations 5";  // pp > 1: UBSan in the generator (schedule.cpp:347)
  const fs::path a = generate("ordered", args), b = generate("shuffled", args + " --shuffle-rows");
  for (const char* name : {"rank_0.sqlite", "rank_3.sqlite"}) {
    const auto x = read_annotated((a / name).string()), y = read_annotated((b / name).string());
    ASSERT_EQ(x.size(), 1u);
    ASSERT_EQ(y.size(), 1u);
    const auto& p = x[0];
    const auto& q = y[0];
    auto str = [](const RankTimeline& t, uint32_t id) { return id == ranks::kNoName ? std::string("-") : t.names.str(id); };
    auto kernels = [&](const RankTimeline& t) {
      std::vector<std::tuple<int64_t, int64_t, int32_t, std::string, int64_t, std::string, int>> v;
      for (size_t i = 0; i < t.kernels.size(); ++i)
        v.emplace_back(t.kernels.start[i], t.kernels.end[i], t.kernels.stream[i], str(t, t.kernels.name[i]),
                       t.kernels.launch[i], str(t, t.kernels.nccl_api[i]), t.kernels.is_nccl[i]);
      EXPECT_TRUE(std::is_sorted(t.kernels.start.begin(), t.kernels.start.end()));
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(kernels(p), kernels(q)) << name;
    auto nvtx = [&](const RankTimeline& t) {
      std::vector<std::tuple<int64_t, int64_t, std::string, int, uint32_t>> v;
      for (size_t i = 0; i < t.nvtx.size(); ++i)
        v.emplace_back(t.nvtx.start[i], t.nvtx.end[i], str(t, t.nvtx.name[i]), t.nvtx.nccl_domain[i], t.nvtx.tid[i]);
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(nvtx(p), nvtx(q)) << name;
    EXPECT_EQ(p.api.start.size(), q.api.start.size());
    EXPECT_EQ(p.copies.start.size(), q.copies.start.size());
    EXPECT_EQ(p.launches_total, q.launches_total);
    EXPECT_EQ(p.capture_start, q.capture_start);
    EXPECT_EQ(p.capture_end, q.capture_end);
    EXPECT_GT(p.kernels.size(), 100u);
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

}  // namespace
