// Tests of straggler-sim: schema as nsys writes it, counts equal to truth.json, timing signatures.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>
#include "ddl.hpp"
#include "sim.hpp"
#include "sim_fixture.hpp"

namespace {

using namespace simtest;

TEST(Sim, TinyRunHasNsysTablesAndColumns) {
  const fs::path dir = tmp_dir("schema");
  sim::generate(tiny(dir));
  const std::string f = (dir / "rank_0.sqlite").string();
  for (const char* t : {"StringIds", "META_DATA_EXPORT", "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_SYSTEM_ENV",
                        "ANALYSIS_DETAILS", "PROCESSES", "ThreadNames", "CUPTI_ACTIVITY_KIND_KERNEL",
                        "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
                        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "TARGET_INFO_CUDA_STREAM"})
    EXPECT_FALSE(columns(f, t).empty()) << t;
  const std::vector<std::string> kernel = {
      "start", "end", "deviceId", "contextId", "greenContextId", "streamId", "correlationId", "globalPid",
      "demangledName", "shortName", "mangledName", "launchType", "cacheConfig", "registersPerThread", "gridX", "gridY",
      "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread",
      "localMemoryTotal", "gridId", "sharedMemoryExecuted", "graphNodeId", "sharedMemoryLimitConfig",
      "qmdBulkReleaseDone", "qmdPreexitDone", "qmdLastCtaDone", "graphId", "clusterX", "clusterY", "clusterZ",
      "clusterSchedulingPolicy", "maxPotentialClusterSize", "maxActiveClusters", "sharedMemoryRequestedPercentage",
      "tensorSizeMinusOneElements"};
  EXPECT_EQ(columns(f, "CUPTI_ACTIVITY_KIND_KERNEL"), kernel);
  EXPECT_EQ(columns(f, "CUPTI_ACTIVITY_KIND_RUNTIME"),
            (std::vector<std::string>{"start", "end", "eventClass", "globalTid", "correlationId", "nameId",
                                      "returnValue", "callchainId"}));
  EXPECT_EQ(columns(f, "TARGET_INFO_SESSION_START_TIME"),
            (std::vector<std::string>{"utcEpochNs", "utcTime", "localTime", "systemClockNs"}));
  EXPECT_EQ(columns(f, "NVTX_EVENTS").back(), "binaryData");
  EXPECT_EQ(query(f, "SELECT value FROM META_DATA_EXPORT WHERE name='EXPORT_SCHEMA_VERSION'")[0][0], "3.25.0");
  EXPECT_EQ(query(f, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='Hostname'")[0][0], "node-00");
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType=75 AND text='NCCL' AND domainId=1"), 1);
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM NVTX_EVENTS WHERE domainId=0 AND text LIKE 'ProfilerStep#%'"), 3);
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM sqlite_master WHERE type='index'"), 0);
  // H2D batch per iteration, D2H loss, one stream sync each.
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=1"), 3);
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType=3"), 3);
  fs::remove_all(dir);
}

TEST(Sim, KernelCountsMatchTruthAndNcclKernelsHaveLaunches) {
  const fs::path dir = tmp_dir("counts");
  sim::generate(tiny(dir));
  const auto truth = per_rank(slurp((dir / "truth.json").string()));
  ASSERT_EQ(truth.size(), 8u);
  for (auto& [rank, t] : truth) {
    const std::string f = (dir / ("rank_" + std::to_string(rank) + ".sqlite")).string();
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), t.kernels) << rank;
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM (" + kNcclKernels + ")"), t.nccl) << rank;
    EXPECT_GT(t.nccl, 0);
    // Every NCCL kernel: a cuLaunchKernelEx with the same correlationId and pid, inside an NCCL NVTX range.
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM (" + kNcclKernels + ") k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                        "ON r.correlationId = k.correlationId AND r.globalTid / 16777216 = k.globalPid / 16777216 "
                        "JOIN StringIds s ON s.id = r.nameId WHERE s.value = 'cuLaunchKernelEx' AND EXISTS ("
                        "SELECT 1 FROM NVTX_EVENTS e WHERE e.domainId = 1 AND e.eventType = 59 AND "
                        "e.globalTid = r.globalTid AND e.start <= r.start AND e.end >= r.end)"),
              t.nccl) << rank;
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                        "ON r.correlationId = k.correlationId WHERE r.start IS NULL"), 0);
  }
  fs::remove_all(dir);
}

// NCCL kernels of one stream on one rank file, in UTC true time (after removing the host's clock error).
std::vector<std::pair<int64_t, int64_t>> nccl_true(const fs::path& dir, const std::string& truth, int rank, int stream,
                                                   const std::string& host) {
  const std::string f = (dir / ("rank_" + std::to_string(rank) + ".sqlite")).string();
  const int64_t utc = scalar(f, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
  const int64_t off = clock_offset(truth, host);
  std::vector<std::pair<int64_t, int64_t>> v;
  for (auto& r : query(f, kNcclKernels + " AND k.streamId = " + std::to_string(stream) + " ORDER BY k.start"))
    v.push_back({utc + std::stoll(r[0]) - off, utc + std::stoll(r[1]) - off});
  return v;
}

TEST(Sim, MatchedCollectivesEndTogetherInTrueTime) {
  const fs::path dir = tmp_dir("match");
  sim::Options o = tiny(dir);
  o.clock_offset_ms = 20;
  sim::generate(o);
  const std::string truth = slurp((dir / "truth.json").string());
  EXPECT_NE(clock_offset(truth, "node-01"), 0);
  // tp-0 = ranks 0,1 (stream 13); dp-0 = ranks 0,2 (stream 21); pp-0 = ranks 0,4 across hosts: the
  // link to the next stage is stream 19 on rank 0, the link to the previous stage stream 17 on rank 4.
  const std::vector<std::tuple<int, int, int, int, std::string>> pairs = {
      {0, 1, 13, 13, "node-00"}, {0, 2, 21, 21, "node-00"}, {0, 4, 19, 17, "node-01"}};
  for (auto& [a, b, stream_a, stream_b, host_b] : pairs) {
    auto ka = nccl_true(dir, truth, a, stream_a, "node-00"), kb = nccl_true(dir, truth, b, stream_b, host_b);
    ASSERT_EQ(ka.size(), kb.size());
    ASSERT_FALSE(ka.empty());
    int64_t max_end_skew = 0, max_start_skew = 0;
    for (size_t i = 0; i < ka.size(); ++i) {
      max_end_skew = std::max<int64_t>(max_end_skew, std::llabs(ka[i].second - kb[i].second));
      max_start_skew = std::max<int64_t>(max_start_skew, std::llabs(ka[i].first - kb[i].first));
    }
    EXPECT_LE(max_end_skew, 3000) << a << "-" << b;
    EXPECT_GT(max_start_skew, 10000) << "early arrivers should wait inside their kernels";
  }
  fs::remove_all(dir);
}

// Mean compute-kernel duration (stream 7) of one rank per iteration, from the ProfilerStep ranges.
std::vector<double> compute_mean_per_iter(const std::string& f) {
  std::vector<double> v;
  for (auto& r : query(f, "SELECT (SELECT avg(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                          "CUPTI_ACTIVITY_KIND_RUNTIME rt ON rt.correlationId = k.correlationId WHERE k.streamId = 7 "
                          "AND rt.start >= e.start AND rt.end <= e.end) FROM NVTX_EVENTS e WHERE e.domainId = 0 "
                          "ORDER BY e.start"))
    v.push_back(std::stod(r[0]));
  return v;
}

TEST(Sim, SlowGpuRankIsFactorSlowerAfterOnset) {
  const fs::path dir = tmp_dir("slow");
  sim::Options o = tiny(dir);
  o.iterations = 6;
  o.faults.push_back(sim::parse_fault("slow_gpu:1:3:1.4"));
  sim::generate(o);
  const auto slow = compute_mean_per_iter((dir / "rank_1.sqlite").string());
  const auto ref = compute_mean_per_iter((dir / "rank_0.sqlite").string());
  ASSERT_EQ(slow.size(), 6u);
  for (int it = 1; it < 6; ++it) {
    const double ratio = slow[it] / ref[it];
    if (it < 3) EXPECT_NEAR(ratio, 1.0, 0.05) << it;
    else EXPECT_NEAR(ratio, 1.4, 0.07) << it;
  }
  EXPECT_NE(slurp((dir / "truth.json").string()).find(R"("rank": 1, "cause": "slow_gpu", "onset_iteration": 3)"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Sim, SameSeedSameOutputWhateverTheThreadCount) {
  const fs::path a = tmp_dir("det_a"), b = tmp_dir("det_b");
  sim::Options oa = tiny(a), ob = tiny(b);
  oa.threads = 1;
  ob.threads = 3;
  oa.faults = ob.faults = {sim::parse_fault("host_delay:2:1:5")};
  sim::generate(oa);
  sim::generate(ob);
  expect_same_run(a, b);
  sim::Options oc = tiny(b);
  oc.seed = 2;
  sim::generate(oc);
  EXPECT_NE(query((a / "rank_0.sqlite").string(), "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid"),
            query((b / "rank_0.sqlite").string(), "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid"));
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(Sim, Schema30ViaCli) {
  const fs::path dir = tmp_dir("v30");
  const std::string cmd = std::string(SS_SIM_BIN) + " " + dir.string() +
                          " --layout 2x2x2 --hosts 2 --iterations 2 --schema 3.0 --per-host-files 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string f = (dir / "node-01.sqlite").string();
  EXPECT_EQ(query(f, "SELECT value FROM EXPORT_META_DATA WHERE name='EXPORT_SCHEMA_VERSION'")[0][0], "3.0.0");
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM sqlite_master WHERE name='META_DATA_EXPORT'"), 0);
  const auto kc = columns(f, "CUPTI_ACTIVITY_KIND_KERNEL");
  EXPECT_EQ(std::find(kc.begin(), kc.end(), "greenContextId"), kc.end());
  EXPECT_EQ(kc.back(), "sharedMemoryLimitConfig");
  EXPECT_EQ(columns(f, "TARGET_INFO_SESSION_START_TIME").size(), 3u);
  // Per-host file: the four rank processes of node-01 (ranks 4..7), devices 0..3, old NCCL kernel names.
  EXPECT_EQ(scalar(f, "SELECT count(DISTINCT globalPid) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 4);
  EXPECT_EQ(scalar(f, "SELECT max(deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 3);
  EXPECT_GT(scalar(f, "SELECT count(*) FROM StringIds WHERE value='ncclKernel_AllReduce_RING_LL_Sum_bf16'"), 0);
  const auto truth = per_rank(slurp((dir / "truth.json").string()));
  int64_t sum = 0;
  for (int r = 4; r < 8; ++r) sum += truth.at(r).kernels;
  EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), sum);
  fs::remove_all(dir);
}

TEST(Sim, HangEndsProfilesAndRecordsDesync) {
  const fs::path dir = tmp_dir("hang");
  sim::Options o = tiny(dir);
  o.iterations = 4;
  o.faults.push_back(sim::parse_fault("hang:5:2"));
  sim::generate(o);
  const std::string truth = slurp((dir / "truth.json").string());
  const auto pr = per_rank(truth);
  EXPECT_EQ(pr.at(5).iterations, 2);
  for (auto& [r, t] : pr) EXPECT_LE(t.iterations, 2) << r;  // everyone ends up blocked
  EXPECT_NE(truth.find(R"("communicator": "tp-2")"), std::string::npos);
  EXPECT_NE(truth.find(R"("missing_ranks": [5])"), std::string::npos);
  // Rank 4 (tp peer of 5) wrote exactly as many tp kernels as the hang point's seq.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(truth, m, std::regex(R"re("communicator": "tp-2", "seq": (\d+))re")));
  EXPECT_EQ(scalar((dir / "rank_4.sqlite").string(), "SELECT count(*) FROM (" + kNcclKernels + " AND k.streamId = 13)"),
            std::stoll(m[1]));
  fs::remove_all(dir);
}

TEST(Sim, HealthyRunHasNoSystematicallyLateRank) {
  const fs::path dir = tmp_dir("healthy");
  sim::Options o = tiny(dir);
  o.iterations = 6;
  sim::generate(o);
  const std::string truth = slurp((dir / "truth.json").string());
  // tp-0: who arrives last at each all-reduce should be close to a coin flip.
  auto a = nccl_true(dir, truth, 0, 13, "node-00"), b = nccl_true(dir, truth, 1, 13, "node-00");
  ASSERT_EQ(a.size(), b.size());
  int a_last = 0;
  for (size_t i = 0; i < a.size(); ++i) a_last += a[i].first > b[i].first;
  const double frac = double(a_last) / double(a.size());
  EXPECT_GT(frac, 0.3);
  EXPECT_LT(frac, 0.7);
  fs::remove_all(dir);
}

TEST(Sim, BadFaultSpecsAreRejected) {
  EXPECT_THROW(sim::parse_fault("slow_gpu:1:2"), std::invalid_argument);
  EXPECT_THROW(sim::parse_fault("nonsense:1:2:3"), std::invalid_argument);
  EXPECT_THROW(sim::parse_fault("slow_gpu:x:2:1.5"), std::invalid_argument);
  sim::Options o = tiny(tmp_dir("bad"));
  o.faults.push_back(sim::parse_fault("slow_gpu:99:1:1.5"));
  EXPECT_THROW(sim::validate(o), std::invalid_argument);
}

// ---- --conventions random and crash runs ----

// Column names of every table the DDL strings create (in an in-memory database).

}  // namespace
