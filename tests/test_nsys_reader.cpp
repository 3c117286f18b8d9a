// nsys reader: real exports from ../shared/data/real (numbers checked with the sqlite3 CLI, see
// the queries next to each test) and small fixtures for the rules of docs/nsys-export-notes.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "read_annotated.hpp"
#include "nsys_fixture.hpp"
#include "ranks/nsys_reader.hpp"

namespace fs = std::filesystem;
using ranks::ProfileError;
using testing_fixture::NsysFixture;

namespace {

std::string real(const std::string& name) { return std::string(SS_SHARED_DIR) + "/data/real/" + name; }

#define REQUIRE_REAL(file)                                                                              \
  if (!fs::exists(real(file))) {                                                                    \
    GTEST_SKIP() << "real profile " << real(file) << " absent (../shared/data/real)";              \
  }                                                                                                 \
  do {                                                                                              \
  } while (0)

size_t count_name_prefix(const ranks::RankTimeline& tl, const std::string& prefix) {
  size_t n = 0;
  for (auto id : tl.kernels.name) n += tl.names.str(id).rfind(prefix, 0) == 0;
  return n;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("ss-reader-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& n) const { return (path / n).string(); }
};

}  // namespace

// sqlite3 nsysai_mfu_2gpu_before.sqlite "select globalPid/0x1000000%0x1000000, deviceId, count(*),
//   sum(s.value='ncclDevKernel_SendRecv') from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id=k.shortName group by 1,2"
//   -> 144|0|1993|33, 145|1|2017|33
TEST(RealProfiles, TorchrunTwoRankCaptureSplitsByProcess) {
  REQUIRE_REAL("nsysai_mfu_2gpu_before.sqlite");
  auto tls = read_annotated(real("nsysai_mfu_2gpu_before.sqlite"));
  ASSERT_EQ(tls.size(), 2u);
  EXPECT_EQ(tls[0].pid, 144);
  EXPECT_EQ(tls[0].device, 0);
  EXPECT_EQ(tls[1].pid, 145);
  EXPECT_EQ(tls[1].device, 1);
  EXPECT_EQ(tls[0].kernels.size(), 1993u);
  EXPECT_EQ(tls[1].kernels.size(), 2017u);
  for (const auto& tl : tls) {
    EXPECT_EQ(count_name_prefix(tl, "ncclDevKernel_SendRecv"), 33u);
    size_t nccl = 0;
    for (auto v : tl.kernels.is_nccl) nccl += v;
    EXPECT_EQ(nccl, 33u);
    EXPECT_EQ(tl.host, "modal");
    EXPECT_EQ(tl.source.schema, "3.25.0");
    EXPECT_EQ(tl.source.version, "2026.2.1.210");
    EXPECT_EQ(tl.utc_epoch_ns, 1779782330176752435LL);
    EXPECT_TRUE(std::is_sorted(tl.kernels.start.begin(), tl.kernels.start.end()));
  }
}

// Kernels with a launch row (join on correlationId AND pid): 1981 / 2005; NCCL ones 32 / 32, each
// launched inside an ncclGroupEnd holding ncclSend/ncclRecv. A correlationId-only join is wrong here.
// Host syncs: cudaStreamSynchronize 16 / 17.
TEST(RealProfiles, LaunchJoinUsesProcessAndNcclRangesAreLinked) {
  REQUIRE_REAL("nsysai_mfu_2gpu_before.sqlite");
  auto tls = read_annotated(real("nsysai_mfu_2gpu_before.sqlite"));
  ASSERT_EQ(tls.size(), 2u);
  const size_t launched[] = {1981, 2005}, syncs[] = {16, 17};
  for (size_t r = 0; r < 2; ++r) {
    const auto& k = tls[r].kernels;
    size_t with_launch = 0, nccl_linked = 0;
    for (size_t i = 0; i < k.size(); ++i) {
      with_launch += k.launch[i] != ranks::kNoTime;
      if (k.launch[i] != ranks::kNoTime) {
        EXPECT_LE(k.launch[i], k.start[i]);
      }
      if (k.is_nccl[i] && k.nccl_api[i] != ranks::kNoName) {
        ++nccl_linked;
        const auto& api = tls[r].names.str(k.nccl_api[i]);
        EXPECT_TRUE(api == "ncclSend" || api == "ncclRecv") << api;
      }
    }
    EXPECT_EQ(with_launch, launched[r]);
    EXPECT_EQ(nccl_linked, 32u);
    size_t sync = 0;
    for (auto kind : tls[r].api.kind) sync += kind == ranks::ApiKind::Sync;
    EXPECT_EQ(sync, syncs[r]);
  }
}

TEST(RealProfiles, AfterAndH100Captures) {
  REQUIRE_REAL("nsysai_mfu_2gpu_after.sqlite");
  auto after = read_annotated(real("nsysai_mfu_2gpu_after.sqlite"));
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].kernels.size(), 1793u);
  EXPECT_EQ(after[1].kernels.size(), 1794u);
  EXPECT_EQ(count_name_prefix(after[0], "ncclDevKernel_SendRecv"), 31u);
  EXPECT_EQ(count_name_prefix(after[1], "ncclDevKernel_SendRecv"), 31u);
  auto h100 = read_annotated(real("nsysai_h100_2gpu_1s.sqlite"));
  ASSERT_EQ(h100.size(), 2u);
  EXPECT_EQ(h100[0].kernels.size(), 1721u);
  EXPECT_EQ(h100[1].kernels.size(), 1721u);
  EXPECT_EQ(count_name_prefix(h100[0], "nccl"), 0u);
}

TEST(RealProfiles, OlderSchemaVersions) {
  REQUIRE_REAL("nvfuser_report1_1gpu.sqlite");
  auto nv = read_annotated(real("nvfuser_report1_1gpu.sqlite"));
  ASSERT_EQ(nv.size(), 1u);
  EXPECT_EQ(nv[0].kernels.size(), 19u);
  EXPECT_EQ(nv[0].source.schema, "3.16.1");
  EXPECT_EQ(nv[0].source.version, "2024.6.2.25");
  EXPECT_EQ(nv[0].host, "e9ce1d13d1dc");
  EXPECT_EQ(nv[0].pid, 30156);
  auto mock = read_annotated(real("nsysai_mock_1gpu.sqlite"));
  ASSERT_EQ(mock.size(), 1u);
  EXPECT_EQ(mock[0].kernels.size(), 2u);
  EXPECT_EQ(mock[0].source.schema, "3.24.14");
  EXPECT_EQ(mock[0].host, "DESKTOP-KBEMEQS");
}

TEST(Fixture, RowsInAnyOrderAndNullsAndExtraColumns) {
  TempDir t;
  const auto path = t.file("r.sqlite");
  {
    NsysFixture f(path, "META_DATA_EXPORT", true, ", futureColumn TEXT, anotherNew INTEGER NOT NULL DEFAULT 7");
    f.kernel(10, 0, 7, 5000, 6000, "gemm", 3);
    f.kernel(10, 0, 7, 1000, 2000, "gemm", 1);
    f.exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start,end,deviceId,contextId,streamId,correlationId,globalPid,"
           "demangledName,shortName) VALUES (3000,4000,0,1,7,NULL,NULL,0,0)");  // NULL pid and correlation
    f.runtime(10, 10, 900, 950, "cudaLaunchKernel_v7000", 1);
    f.runtime(10, 10, 4900, 4950, "cudaLaunchKernel_v7000", 3);
  }
  auto tls = read_annotated(path);
  // NULL globalPid is pid 0: a second process.
  ASSERT_EQ(tls.size(), 2u);
  const auto& tl = tls[0].pid == 10 ? tls[0] : tls[1];
  ASSERT_EQ(tl.kernels.size(), 2u);
  EXPECT_EQ(tl.kernels.start[0], 1000);
  EXPECT_EQ(tl.kernels.launch[0], 900);
  EXPECT_EQ(tl.kernels.launch[1], 4900);
  EXPECT_EQ(tl.launches_total, 2);
  EXPECT_EQ(tl.host, "host-a");
}

// A kernel row that ends before it starts (a clock glitch) gets its name's median duration on the
// rank, said once; a file where most kernels have no possible duration is refused.
TEST(Fixture, KernelEndingBeforeItStartsGetsItsNamesDurationWithAWarning) {
  TempDir t;
  const auto path = t.file("r.sqlite");
  {
    NsysFixture f(path);
    f.kernel(10, 0, 7, 1000, 2000, "gemm", 1);
    f.kernel(10, 0, 7, 5000, 3000, "gemm", 2);
    f.kernel(10, 0, 7, 9000, 9500, "other", 3);
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 1u);
  const auto& k = tls[0].kernels;
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k.end[1] - k.start[1], 1000);
  ASSERT_EQ(tls[0].warnings.size(), 1u);
  EXPECT_NE(tls[0].warnings[0].find("1 kernel row with an impossible duration"), std::string::npos)
      << tls[0].warnings[0];
  const auto bad = t.file("bad.sqlite");
  {
    NsysFixture f(bad);
    f.kernel(10, 0, 7, 1000, 2000, "gemm", 1);
    f.kernel(10, 0, 7, 5000, 3000, "gemm", 2);
    f.kernel(10, 0, 7, 9000, 8000, "gemm", 3);
  }
  try {
    read_annotated(bad);
    ADD_FAILURE() << "read a file whose kernels mostly have no possible duration";
  } catch (const ranks::ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("2 of 3 kernel rows have no possible duration"), std::string::npos) << e.what();
  }
}

// A 0 ns kernel whose name runs 10 us and more elsewhere lost its duration (a trace rounds only
// short kernels to 0); a short kernel's 0 stays.
TEST(Fixture, ZeroDurationOfALongKernelIsRepaired) {
  TempDir t;
  const auto path = t.file("z.sqlite");
  {
    NsysFixture f(path);
    f.kernel(10, 0, 7, 1000, 51000, "gemm", 1);
    f.kernel(10, 0, 7, 60000, 110000, "gemm", 2);
    f.kernel(10, 0, 7, 120000, 120000, "gemm", 3);
    f.kernel(10, 0, 8, 130000, 130400, "tiny", 4);
    f.kernel(10, 0, 8, 140000, 140000, "tiny", 5);
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 1u);
  const auto& k = tls[0].kernels;
  ASSERT_EQ(k.size(), 5u);
  EXPECT_EQ(k.end[2] - k.start[2], 50000);
  EXPECT_EQ(k.end[4] - k.start[4], 0);
  ASSERT_EQ(tls[0].warnings.size(), 1u);
  EXPECT_NE(tls[0].warnings[0].find("1 kernel row with an impossible duration"), std::string::npos) << tls[0].warnings[0];
}

// An NCCL kernel's end is a wait for its peers, which its name's median does not tell: when the
// next kernel on its stream was queued (launched before it started), that start is its end (one
// kernel at a time on a stream). A compute kernel keeps its name's median, bounded by its successor.
TEST(Fixture, ImpossibleNcclEndIsItsQueuedSuccessorsStart) {
  TempDir t;
  const auto path = t.file("n.sqlite");
  {
    NsysFixture f(path);
    const std::string ar = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
    f.kernel(10, 0, 9, 1000, 1200, ar, 1);
    f.kernel(10, 0, 9, 2000, 2200, ar, 2);
    f.kernel(10, 0, 9, 3000, 2000, ar, 3);     // ended before it started
    f.kernel(10, 0, 9, 12000, 12200, ar, 4);   // queued: launched at 5000
    f.kernel(10, 0, 7, 20000, 21000, "gemm", 5);
    f.kernel(10, 0, 7, 22000, 23000, "gemm", 6);
    f.kernel(10, 0, 7, 24000, 10, "gemm", 7);  // ended before it started
    f.kernel(10, 0, 7, 24500, 25500, "gemm", 8);
    for (int c = 1; c <= 8; ++c) f.runtime(10, 10, c == 4 ? 5000 : 500 * c, c == 4 ? 5010 : 500 * c + 10, "cudaLaunchKernel", c);
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 1u);
  const auto& k = tls[0].kernels;
  ASSERT_EQ(k.size(), 8u);
  EXPECT_EQ(k.end[2], 12000);  // its queued successor's start, not 3000 + its name's median 200
  EXPECT_EQ(k.end[6], 24500);  // the median 1000 would overlap its successor
}

TEST(Fixture, CorrelationIdsAreJoinedPerProcess) {
  TempDir t;
  const auto path = t.file("two.sqlite");
  {
    NsysFixture f(path);
    // Both processes use correlation id 5; each launch must land on its own process's kernel.
    f.kernel(1, 0, 7, 1000, 2000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5);
    f.kernel(2, 1, 7, 1100, 2000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5);
    f.runtime(1, 1, 500, 510, "cuLaunchKernelEx", 5);
    f.runtime(2, 2, 700, 710, "cuLaunchKernelEx", 5);
    f.range(1, 1, 400, 600, "ncclAllReduce", 1);
    f.range(2, 2, 600, 800, "ncclAllReduce", 1);  // no domain-create rows: recognised by name
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 2u);
  EXPECT_EQ(tls[0].kernels.launch[0], 500);
  EXPECT_EQ(tls[1].kernels.launch[0], 700);
  for (const auto& tl : tls) {
    ASSERT_NE(tl.kernels.nccl_api[0], ranks::kNoName);
    EXPECT_EQ(tl.names.str(tl.kernels.nccl_api[0]), "ncclAllReduce");
  }
}

TEST(Fixture, NcclDomainFromCreateRowAndGroupedSendRecv) {
  TempDir t;
  const auto path = t.file("g.sqlite");
  {
    NsysFixture f(path);
    f.domain_create(1, 3, "NCCL");
    f.domain_create(1, 4, "other");
    f.kernel(1, 0, 9, 1000, 2000, "ncclDevKernel_SendRecv", 8);
    f.range(1, 1, 100, 150, "ncclGroupStart", 3);
    f.range(1, 1, 160, 170, "ncclSend", 3);
    f.range(1, 1, 180, 190, "ncclRecv", 3);
    f.range(1, 1, 200, 400, "ncclGroupEnd", 3);
    f.range(1, 1, 0, 900, "ncclAllReduce", 4);  // not NCCL's domain: must not be taken
    f.runtime(1, 1, 300, 320, "cuLaunchKernelEx", 8);
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 1u);
  const auto& tl = tls[0];
  EXPECT_EQ(tl.names.str(tl.kernels.nccl_api[0]), "ncclRecv");
  size_t nccl_ranges = 0;
  for (auto v : tl.nvtx.nccl_domain) nccl_ranges += v;
  EXPECT_EQ(nccl_ranges, 4u);
}

TEST(Fixture, OldSchemaMetaTable) {
  TempDir t;
  const auto path = t.file("old.sqlite");
  {
    NsysFixture f(path, "EXPORT_META_DATA");
    f.kernel(1, 0, 7, 1, 2, "k", 1);
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 1u);
  EXPECT_EQ(tls[0].source.schema, "3.25.0");
}

TEST(BadInput, EachProblemIsOneLineNamingTheFile) {
  TempDir t;
  auto expect_error = [](const std::string& path, const std::string& needle) {
    try {
      read_annotated(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const ProfileError& e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  };
  {
    std::ofstream(t.file("text.sqlite")) << "this is not a database, just text\n";
  }
  expect_error(t.file("text.sqlite"), "not a SQLite file");
  {
    NsysFixture f(t.file("nokernel.sqlite"), "META_DATA_EXPORT", false);
  }
  expect_error(t.file("nokernel.sqlite"), "no CUPTI_ACTIVITY_KIND_KERNEL table");
  {
    NsysFixture f(t.file("empty.sqlite"));
  }
  expect_error(t.file("empty.sqlite"), "kernel table is empty");
  {
    NsysFixture f(t.file("full.sqlite"));
    for (int i = 0; i < 3000; ++i) f.kernel(1, 0, 7, i * 10, i * 10 + 5, "kernel_with_a_long_name_" + std::to_string(i % 50), i);
  }
  {  // truncated copy
    std::ifstream in(t.file("full.sqlite"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(t.file("trunc.sqlite"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  expect_error(t.file("trunc.sqlite"), "");
  {  // corrupt pages in the middle
    std::ifstream in(t.file("full.sqlite"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    for (size_t i = 4096; i < bytes.size(); i += 7) bytes[i] = char(0xA5);
    std::ofstream(t.file("corrupt.sqlite"), std::ios::binary) << bytes;
  }
  expect_error(t.file("corrupt.sqlite"), "");
  expect_error(t.file("missing.sqlite"), "");
  fs::create_symlink("/nonexistent/profile.sqlite", t.path / "dangling.sqlite");
  expect_error(t.file("dangling.sqlite"), "");
  ::mkfifo(t.file("fifo.sqlite").c_str(), 0600);
  expect_error(t.file("fifo.sqlite"), "not a regular file");  // must not block on open
  {
    NsysFixture f(t.file("nometa.sqlite"));
    f.exec("DROP TABLE META_DATA_EXPORT");
  }
  expect_error(t.file("nometa.sqlite"), "not an Nsight Systems SQLite export");
}

// The capture window (docs/nsys-export-notes.md 2.7, 5): a rank recorded after its last event
// (stuck in a collective) has its capture end at the window's end. Before 2026.x startTime and
// stopTime are on the events' timebase; 2026.x writes startTime = systemClockNs (another clock),
// so only `duration` holds: the capture ends no earlier than t = duration.
namespace {
int64_t capture_end_with(const TempDir& t, const std::string& name, int64_t start, int64_t stop, int64_t duration,
                         const char* system_clock) {
  const auto path = t.file(name);
  {
    NsysFixture f(path);
    f.kernel(10, 0, 7, 200'000'000, 300'000'000, "gemm", 1);
    f.exec("CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER NOT NULL, duration INTEGER NOT NULL,"
           " startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL)");
    f.exec("INSERT INTO ANALYSIS_DETAILS VALUES (0," + std::to_string(duration) + "," + std::to_string(start) + "," +
           std::to_string(stop) + ")");
    if (system_clock) {
      f.exec("ALTER TABLE TARGET_INFO_SESSION_START_TIME ADD COLUMN systemClockNs INTEGER");
      f.exec(std::string("UPDATE TARGET_INFO_SESSION_START_TIME SET systemClockNs = ") + system_clock);
    }
  }
  return read_annotated(path).at(0).capture_end;
}
}  // namespace

TEST(Fixture, CaptureEndComesFromTheWindowOnTheEventsTimebase) {
  TempDir t;
  // 2022.4-2024.x: report-relative window, startTime ~0.17 s.
  EXPECT_EQ(capture_end_with(t, "a.sqlite", 170'000'000, 5'000'000'000, 4'830'000'000, nullptr), 5'000'000'000);
  // 2026.x: startTime = systemClockNs (days of uptime), events capture-relative: duration.
  const int64_t sys = 515'396'806'359'142;
  EXPECT_EQ(capture_end_with(t, "b.sqlite", sys, sys + 5'000'000'000, 5'000'000'000, "515396806359142"),
            5'000'000'000);
  // A startTime far past every event without systemClockNs is on another clock too.
  EXPECT_EQ(capture_end_with(t, "c.sqlite", sys, sys + 5'000'000'000, 5'000'000'000, nullptr), 5'000'000'000);
  // A window that ends before the last event is on no timebase we know: the events' end stays.
  EXPECT_EQ(capture_end_with(t, "d.sqlite", sys, sys + 150'000'000, 150'000'000, "515396806359142"), 300'000'000);
  EXPECT_EQ(capture_end_with(t, "e.sqlite", 0, 150'000'000, 150'000'000, nullptr), 300'000'000);
}

// sqlite3 nsysai_mock_1gpu.sqlite "select duration, startTime from ANALYSIS_DETAILS;
//   select systemClockNs from TARGET_INFO_SESSION_START_TIME" -> 1871570402|515396806359142, 515396806359142
TEST(RealProfiles, SystemClockStartTimeUsesTheDuration) {
  REQUIRE_REAL("nsysai_mock_1gpu.sqlite");
  auto tls = read_annotated(real("nsysai_mock_1gpu.sqlite"));
  ASSERT_EQ(tls.size(), 1u);
  EXPECT_EQ(tls[0].capture_end, 1871570402);
}

// Launches without a kernel record: an NCCL range around one makes it a pending NCCL launch. A
// process without NCCL ranges keeps them all (but host callbacks, which never have a kernel
// record) for pending_ops to place, with the calls its completed NCCL kernels were launched by.
TEST(Fixture, LaunchesWithoutKernelsWithAndWithoutNcclRanges) {
  TempDir t;
  const auto path = t.file("u.sqlite");
  {
    NsysFixture f(path);
    for (long long pid : {1, 2}) {
      f.kernel(pid, 0, 7, 1000, 2000, "gemm", 10);
      f.kernel(pid, 0, 13, 2100, 3000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 11);
      f.runtime(pid, pid, 100, 110, "cudaLaunchKernel_v7000", 10);
      f.runtime(pid, pid, 200, 210, "cuLaunchKernelEx", 11);
      f.runtime(pid, pid, 5000, 5010, "cuLaunchKernelEx", 13);  // never completed
      f.runtime(pid, pid, 4000, 4010, "cudaLaunchKernel_v7000", 12);
      f.runtime(pid, pid, 4500, 4510, "cudaLaunchHostFunc_v10000", 14);
    }
    f.range(1, 1, 150, 250, "ncclAllReduce", 1);  // process 1 has NCCL ranges, process 2 none
    f.range(1, 1, 4950, 5050, "ncclAllReduce", 1);
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 2u);
  const auto& with = tls[0].pid == 1 ? tls[0] : tls[1];
  const auto& without = tls[0].pid == 1 ? tls[1] : tls[0];
  ASSERT_EQ(with.pending_nccl.size(), 1u);
  EXPECT_EQ(with.pending_nccl[0].launch, 5000);
  // The launch no NCCL range owns stays for the sequence inference (ranges may miss a launch).
  ASSERT_EQ(with.unfinished_launches.size(), 1u);
  EXPECT_EQ(with.unfinished_launches[0].launch, 4000);
  EXPECT_TRUE(without.pending_nccl.empty());
  ASSERT_EQ(without.unfinished_launches.size(), 2u);  // in time order, the host callback left out
  EXPECT_EQ(without.unfinished_launches[0].launch, 4000);
  EXPECT_EQ(without.names.str(without.unfinished_launches[0].api), "cudaLaunchKernel_v7000");
  EXPECT_EQ(without.unfinished_launches[1].launch, 5000);
  EXPECT_EQ(without.names.str(without.unfinished_launches[1].api), "cuLaunchKernelEx");
  ASSERT_EQ(without.nccl_launch_apis.size(), 1u);
  EXPECT_EQ(without.names.str(without.nccl_launch_apis[0]), "cuLaunchKernelEx");
}

// NCCL does not promise its launch lies inside the API range (foreign crash_blocked: the launch
// follows ncclAllReduce's range). A range holding no launch owns the thread's next launch when
// nothing else was launched in between; a range holding its own launch owns nothing after it.
TEST(Fixture, AnNcclRangeOwnsTheLaunchRightAfterIt) {
  TempDir t;
  const auto path = t.file("a.sqlite");
  {
    NsysFixture f(path);
    f.kernel(1, 0, 13, 2100, 3000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 11);
    f.kernel(1, 0, 7, 3100, 3900, "gemm", 12);
    f.runtime(1, 1, 260, 270, "cuLaunchKernelEx", 11);        // after a range that holds no launch
    f.runtime(1, 1, 300, 310, "cudaLaunchKernel_v7000", 12);  // after the same range: not its
    f.runtime(1, 1, 5000, 5010, "cuLaunchKernelEx", 13);      // never completed, right after a range
    f.runtime(1, 1, 7000, 7010, "cuLaunchKernelEx", 14);      // never completed, a range holds its own
    f.runtime(1, 1, 7100, 7110, "cudaLaunchKernel_v7000", 15);  // after that range: not NCCL's
    f.range(1, 1, 150, 250, "ncclAllReduce", 1);
    f.range(1, 1, 4950, 4990, "ncclAllReduce", 1);
    f.range(1, 1, 6950, 7050, "ncclAllReduce", 1);
  }
  auto tls = read_annotated(path);
  ASSERT_EQ(tls.size(), 1u);
  const auto& tl = tls[0];
  ASSERT_EQ(tl.pending_nccl.size(), 2u);
  EXPECT_EQ(tl.pending_nccl[0].launch, 5000);
  EXPECT_EQ(tl.pending_nccl[1].launch, 7000);
  ASSERT_EQ(tl.unfinished_launches.size(), 1u);
  EXPECT_EQ(tl.unfinished_launches[0].launch, 7100);
  const auto& k = tl.kernels;
  for (size_t i = 0; i < k.size(); ++i) {  // the completed NCCL kernel gets the range's call
    if (k.is_nccl[i]) {
      EXPECT_EQ(tl.names.str(k.nccl_api[i]), "ncclAllReduce");
    }
  }
}

// The rank a launcher gave the process nsys started, from its recorded environment
// (META_DATA_CAPTURE PROCESS_0:ENVIRONMENT_VARIABLE rows): torchrun's RANK first, then Open MPI's,
// PMI's, Slurm's; only a plain number counts, and only a one-process file claims it.
TEST(Fixture, TheLaunchersRankNamesAOneProcessFile) {
  TempDir t;
  auto make = [&](const std::string& name, const std::vector<std::string>& env, std::vector<long long> pids) {
    const auto path = t.file(name);
    NsysFixture f(path);
    for (long long pid : pids) f.kernel(pid, 0, 7, 1000, 2000, "gemm", 10 + pid);
    f.exec("CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT)");
    for (const auto& v : env)
      f.exec("INSERT INTO META_DATA_CAPTURE VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', '" + v + "')");
    f.exec("INSERT INTO META_DATA_CAPTURE VALUES ('PROCESS_1:ENVIRONMENT_VARIABLE', 'RANK=\"9\"')");
    return path;
  };
  auto one = read_annotated(make("a.sqlite", {"SECRET_TOKEN=\"abc\"", "SLURM_PROCID=\"4\"", "RANK=\"12\"", "WORLD_SIZE=\"16\""}, {1}));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].claimed_rank, 12);
  EXPECT_EQ(one[0].claimed_world, 16);
  auto slurm = read_annotated(make("b.sqlite", {"SLURM_PROCID=5", "SLURM_NTASKS=3"}, {1}));
  EXPECT_EQ(slurm[0].claimed_rank, 5);
  EXPECT_EQ(slurm[0].claimed_world, -1);  // a size not above the rank is no size
  auto junk = read_annotated(make("c.sqlite", {"RANK=\"1e3\"", "RANK=\"-1\""}, {1}));
  EXPECT_EQ(junk[0].claimed_rank, -1);
  auto two = read_annotated(make("d.sqlite", {"RANK=\"2\""}, {1, 2}));
  ASSERT_EQ(two.size(), 2u);
  for (const auto& tl : two) EXPECT_EQ(tl.claimed_rank, -1) << "a file of several processes holds the launcher's environment";
}
