// Crash versus capture end, end to end. straggler-sim plants a stuck rank (hang:3:4); the files
// are then edited into the shape a crash leaves: the crashed rank's report ends where it died,
// while the others stay blocked in their next collective (launch rows without kernels) and are
// recorded until the job is killed 60 s later. Schema 3.0 (ANALYSIS_DETAILS on the events'
// timebase) and 3.25 (startTime = systemClockNs, another clock: only duration holds).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>
#include "shell.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN;
constexpr int kCrashed = 3, kRanks = 8;
constexpr int64_t kKilledAfterNs = 60'000'000'000, kSystemClockNs = 515'396'806'359'142;

using testsh::sh;

class Db {
 public:
  explicit Db(const fs::path& p) {
    if (sqlite3_open(p.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot open " + p.string());
  }
  ~Db() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(m + ": " + sql);
    }
  }
  int64_t value(const std::string& sql) {  // first column of the first row; 0 when none or NULL
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) throw std::runtime_error(sql);
    const int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return v;
  }
  bool has_table(const std::string& t) {
    return value("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='" + t + "'") > 0;
  }

 private:
  sqlite3* db_ = nullptr;
};

fs::path rank_file(const fs::path& dir, int r) { return dir / ("rank_" + std::to_string(r) + ".sqlite"); }

const char* kEventTables[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
                              "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                              "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"};

// Last event end of a file (its own timebase).
int64_t last_event(Db& db) {
  int64_t t = 0;
  for (const char* tab : kEventTables)
    if (db.has_table(tab)) t = std::max(t, db.value(std::string("SELECT max(coalesce(end, start)) FROM ") + tab));
  return t;
}

// The capture stops `length` ns after the file's t = 0; 2026.x puts startTime on the system clock.
void set_capture(Db& db, int64_t length, bool system_clock) {
  const int64_t start = system_clock ? kSystemClockNs : 0;
  db.exec("UPDATE ANALYSIS_DETAILS SET duration = " + std::to_string(length) + ", startTime = " +
          std::to_string(start) + ", stopTime = " + std::to_string(start + length));
  if (system_clock) db.exec("UPDATE TARGET_INFO_SESSION_START_TIME SET systemClockNs = " + std::to_string(kSystemClockNs));
}

// Launch rows whose kernel never came (the collective a rank is blocked in).
int64_t launches_without_kernel(Db& db) {
  return db.value("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId IS NOT NULL AND NOT EXISTS "
                  "(SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.correlationId = r.correlationId)");
}

// Crash shape: rank kCrashed died at the start of iteration `iter`: nothing of it after that, its
// report ends 20 ms later. The others are recorded until the job is killed 60 s on.
void make_crash(const fs::path& dir, int iter, bool system_clock) {
  for (int r = 0; r < kRanks; ++r) {
    Db db(rank_file(dir, r));
    if (r == kCrashed) {
      // The iteration's start: its marker, else the end of the one before (a stuck rank has none).
      int64_t t = db.value("SELECT start FROM NVTX_EVENTS WHERE text = 'ProfilerStep#" + std::to_string(iter) + "'");
      if (t == 0) t = db.value("SELECT end FROM NVTX_EVENTS WHERE text = 'ProfilerStep#" + std::to_string(iter - 1) + "'");
      if (t == 0) throw std::runtime_error("no ProfilerStep marker");
      for (const char* tab : kEventTables)
        if (db.has_table(tab)) db.exec(std::string("DELETE FROM ") + tab + " WHERE start > " + std::to_string(t));
      set_capture(db, t + 20'000'000, system_clock);
    } else {
      set_capture(db, db.value("SELECT duration FROM ANALYSIS_DETAILS") + kKilledAfterNs, system_clock);
    }
  }
}

struct Scan {
  int status = -1;
  std::string report;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
};

void scan(const fs::path& dir, Scan& s) {
  const fs::path json = dir.string() + ".json";  // beside the run: inputs are never written
  s.report = sh(kScan + " " + dir.string() + " --layout 2x2x2 --summary " + json.string(), &s.status);
  ASSERT_EQ(s.status, 0) << s.report;
  s.summary = s.parser.load(json.string());
}

// (communicator, missing ranks) of the summary's rows under `key`.
std::set<std::pair<std::string, std::vector<int64_t>>> rows(const Scan& s, const char* key, const char* ranks_key) {
  std::set<std::pair<std::string, std::vector<int64_t>>> out;
  for (auto d : s.summary[key].get_array()) {
    std::vector<int64_t> ranks;
    for (auto r : d[ranks_key].get_array()) ranks.push_back(int64_t(r));
    out.insert({std::string(std::string_view(d["communicator"])), ranks});
  }
  return out;
}

class Crash : public ::testing::Test {
 protected:
  static fs::path root;
  static void SetUpTestSuite() {
    root = fs::temp_directory_path() / ("ss-crash-" + std::to_string(::getpid()));
    fs::remove_all(root);
    int st = 0;
    for (const char* schema : {"3.25", "3.0"}) {
      auto out = sh(kSim + " " + (root / (std::string("hang-") + schema)).string() +
                        " --layout 2x2x2 --hosts 2 --iterations 6 --fault hang:3:4 --schema " + schema, &st);
      ASSERT_EQ(st, 0) << out;
    }
    auto out = sh(kSim + " " + (root / "healthy").string() + " --layout 2x2x2 --hosts 2 --iterations 6", &st);
    ASSERT_EQ(st, 0) << out;
    out = sh(kSim + " " + (root / "hang-host").string() +
                 " --layout 2x2x2 --hosts 2 --iterations 6 --fault hang:3:4 --schema 3.0 --per-host-files",
             &st);
    ASSERT_EQ(st, 0) << out;
  }
  static void TearDownTestSuite() { fs::remove_all(root); }
  static fs::path copy(const std::string& from, const std::string& to) {
    fs::remove_all(root / to);
    fs::copy(root / from, root / to, fs::copy_options::recursive);
    return root / to;
  }
};
fs::path Crash::root;

// Rank 3's own communicators: it is missing there, its peers wait in them.
const std::set<std::pair<std::string, std::vector<int64_t>>> kCrashRows = {
    {"dp-1", {3}}, {"pp-3:0-1", {3}}, {"tp-1", {3}}};

void expect_crash(const fs::path& dir) {
  for (int r = 0; r < kRanks; ++r) {  // the fixture: blocked ranks have launches without kernels
    if (r == kCrashed || (r != 2 && r != 1 && r != 7)) continue;
    Db db(rank_file(dir, r));
    EXPECT_GT(launches_without_kernel(db), 0) << "rank " << r;
  }
  Scan s;
  ASSERT_NO_FATAL_FAILURE(scan(dir, s));
  EXPECT_NE(s.report.find("desync of rank 3"), std::string::npos) << s.report;
  EXPECT_EQ(rows(s, "desync", "missing_ranks"), kCrashRows) << s.report;
  EXPECT_EQ(s.summary["capture_ended"].get_array().size(), 0u) << s.report;
}

// NCCL_NVTX_DISABLE=1, or NVTX not traced: no NCCL API ranges (docs/nsys-export-notes.md 4.2), so
// nothing labels a blocked rank's launches as NCCL's.
void strip_nccl_nvtx(const fs::path& dir) {
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() != ".sqlite") continue;
    Db db(f.path());
    db.exec("DELETE FROM NVTX_EVENTS WHERE domainId = 1");  // the generator's NCCL domain
    if (db.value("SELECT count(*) FROM NVTX_EVENTS WHERE domainId <> 0") != 0)
      throw std::runtime_error("NVTX rows left outside the default domain in " + f.path().string());
  }
}

void expect_no_desync(const fs::path& dir) {
  Scan s;
  ASSERT_NO_FATAL_FAILURE(scan(dir, s));
  EXPECT_EQ(s.summary["desync"].get_array().size(), 0u) << s.report;
  EXPECT_EQ(s.report.find("DESYNC"), std::string::npos) << s.report;
}

}  // namespace

TEST_F(Crash, CrashIsTheRootCauseWithSchema325SystemClockStart) {
  const auto dir = copy("hang-3.25", "crash-325-sysclock");
  make_crash(dir, 4, true);
  Db db(rank_file(dir, 2));  // startTime is far from the events: only duration tells the length
  EXPECT_GT(db.value("SELECT startTime FROM ANALYSIS_DETAILS"), 100 * last_event(db));
  expect_crash(dir);
}

TEST_F(Crash, CrashIsTheRootCauseWithSchema325CaptureRelativeStart) {
  const auto dir = copy("hang-3.25", "crash-325");
  make_crash(dir, 4, false);
  expect_crash(dir);
}

TEST_F(Crash, CrashIsTheRootCauseWithSchema30) {
  const auto dir = copy("hang-3.0", "crash-30");
  make_crash(dir, 4, false);
  expect_crash(dir);
}

// Captures that end at different moments, shortly after each other (nsys --duration per rank,
// staggered starts): a member lacks ops the others completed, nobody is blocked past the margin.
// That is capture_ended, never a desync.
TEST_F(Crash, StaggeredCaptureEndsAreNotADesync) {
  const auto dir = copy("healthy", "staggered");
  for (int r = 0; r < kRanks; ++r) {
    Db db(rank_file(dir, r));
    const int64_t t = db.value("SELECT start FROM NVTX_EVENTS WHERE text = 'ProfilerStep#4'") + r * 15'000'000;
    ASSERT_GT(t, r * 15'000'000);
    for (const char* tab : kEventTables)
      if (db.has_table(tab)) db.exec(std::string("DELETE FROM ") + tab + " WHERE start > " + std::to_string(t));
    set_capture(db, t + 5'000'000, true);
  }
  Scan s;
  ASSERT_NO_FATAL_FAILURE(scan(dir, s));
  EXPECT_EQ(s.summary["desync"].get_array().size(), 0u) << s.report;
  EXPECT_GT(s.summary["capture_ended"].get_array().size(), 0u) << s.report;
  EXPECT_EQ(s.report.find("DESYNC"), std::string::npos) << s.report;
}

// The stuck-rank run, but every capture ends within 0.6 s of rank 3's: the others' launches are
// younger than the margin when their captures end, so nobody was seen blocked: no desync.
TEST_F(Crash, BlockedLessThanTheMarginIsNotACrash) {
  const auto dir = copy("hang-3.25", "short-block");
  for (int r = 0; r < kRanks; ++r) {
    Db db(rank_file(dir, r));
    set_capture(db, last_event(db) + (r == kCrashed ? 20'000'000 : 100'000'000 + r * 60'000'000), true);
  }
  Scan s;
  ASSERT_NO_FATAL_FAILURE(scan(dir, s));
  EXPECT_EQ(s.summary["desync"].get_array().size(), 0u) << s.report;
  EXPECT_EQ(s.report.find("DESYNC"), std::string::npos) << s.report;
}

// The stuck rank itself (hang: its capture runs on with the others'), with the 2026.x system-clock
// startTime: still a desync with rank 3 missing.
TEST_F(Crash, HangWithSystemClockStartIsADesync) {
  const auto dir = copy("hang-3.25", "hang-sysclock");
  for (int r = 0; r < kRanks; ++r) {
    Db db(rank_file(dir, r));
    set_capture(db, db.value("SELECT duration FROM ANALYSIS_DETAILS"), true);
  }
  Scan s;
  ASSERT_NO_FATAL_FAILURE(scan(dir, s));
  EXPECT_NE(s.report.find("desync of rank 3"), std::string::npos) << s.report;
  EXPECT_EQ(rows(s, "desync", "missing_ranks"), kCrashRows) << s.report;
}

// Without NCCL NVTX ranges the blocked ranks' last launches (no kernel record, the GPU idle for the
// minute until the kill) are placed by the launch sequence: the same crash verdict. 3.0 launches
// NCCL with cudaLaunchKernel, 3.25 with cuLaunchKernelEx (as the generator's compute kernels do).
TEST_F(Crash, CrashWithoutNcclNvtxIsTheRootCause) {
  for (const bool new_schema : {false, true}) {
    SCOPED_TRACE(new_schema ? "3.25" : "3.0");
    const auto dir = copy(new_schema ? "hang-3.25" : "hang-3.0", new_schema ? "crash-325-nonvtx" : "crash-30-nonvtx");
    make_crash(dir, 4, new_schema);
    strip_nccl_nvtx(dir);
    expect_crash(dir);
  }
}

// One file per host: ANALYSIS_DETAILS spans all its processes, so each one's capture ends with
// the file's. Without NCCL NVTX ranges: the same desync rows as with them.
TEST_F(Crash, HangInPerHostFilesWithoutNcclNvtxIsTheSameDesync) {
  Scan with, without;
  ASSERT_NO_FATAL_FAILURE(scan(root / "hang-host", with));
  const auto dir = copy("hang-host", "hang-host-nonvtx");
  strip_nccl_nvtx(dir);
  ASSERT_NO_FATAL_FAILURE(scan(dir, without));
  EXPECT_NE(without.report.find("desync of rank 3"), std::string::npos) << without.report;
  EXPECT_EQ(rows(without, "desync", "missing_ranks"), rows(with, "desync", "missing_ranks")) << without.report;
  EXPECT_EQ(rows(without, "desync", "blocked_ranks"), rows(with, "desync", "blocked_ranks")) << without.report;
  EXPECT_TRUE(rows(without, "desync", "missing_ranks").count({"tp-1", {3}})) << without.report;
}

// Healthy captures without NCCL NVTX ranges that hold launches without kernel records: no hang.
TEST_F(Crash, HealthyCaptureCutMidIterationWithoutNcclNvtxIsNoDesync) {
  // Cut 3 ms into iteration 4: the kernels still queued or running have launch rows only.
  const auto dir = copy("healthy", "cut-nonvtx");
  strip_nccl_nvtx(dir);
  int64_t unfinished = 0;
  for (int r = 0; r < kRanks; ++r) {
    Db db(rank_file(dir, r));
    const int64_t t = db.value("SELECT start FROM NVTX_EVENTS WHERE text = 'ProfilerStep#4'") + 3'000'000;
    db.exec("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end > " + std::to_string(t));
    for (const char* tab : kEventTables)
      if (db.has_table(tab)) db.exec(std::string("DELETE FROM ") + tab + " WHERE start > " + std::to_string(t));
    set_capture(db, t + 1'000'000, false);
    unfinished += launches_without_kernel(db);
  }
  EXPECT_GT(unfinished, 0);
  expect_no_desync(dir);
}

TEST_F(Crash, HealthyCaptureIdleAtTheEndWithLostRecordsWithoutNcclNvtxIsNoDesync) {
  // The job ended normally and the capture ran on for a minute; CUPTI lost a few compute kernel
  // records mid-run: old launches without kernels, all at compute kernels' places.
  const auto dir = copy("healthy", "idle-nonvtx");
  strip_nccl_nvtx(dir);
  for (int r = 0; r < kRanks; ++r) {
    Db db(rank_file(dir, r));
    const int64_t before = launches_without_kernel(db);  // other calls (copies, syncs) have none either
    db.exec("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid IN (SELECT k.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.shortName WHERE s.value NOT LIKE 'nccl%' ORDER BY k.start LIMIT 3 OFFSET 500)");
    set_capture(db, db.value("SELECT duration FROM ANALYSIS_DETAILS") + kKilledAfterNs, false);
    EXPECT_EQ(launches_without_kernel(db), before + 3) << "rank " << r;
  }
  expect_no_desync(dir);
}
