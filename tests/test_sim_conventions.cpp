// straggler-sim --conventions random: valid exports whatever it varies, truth records it; crash fault.
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

std::map<std::string, std::vector<std::string>> ddl_columns(bool v30) {
  sqlite3* db = nullptr;
  sqlite3_open(":memory:", &db);
  for (const char* ddl : v30 ? sim::kDdl30 : sim::kDdl325) sqlite3_exec(db, ddl, nullptr, nullptr, nullptr);
  std::map<std::string, std::vector<std::string>> out;
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table'", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  for (const auto& t : tables) {
    sqlite3_prepare_v2(db, ("PRAGMA table_info(" + t + ")").c_str(), -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) out[t].emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// What the random conventions wrote for one rank, from truth.json.
struct ConvRank {
  int rank = 0;
  int64_t pid = 0, device = 0, graph_launches = 0;
  std::string file, streams, order;
};
std::map<int, ConvRank> conv_ranks(const std::string& truth) {
  std::map<int, ConvRank> m;
  std::regex re(R"re(\{"rank": (\d+), "pid": (\d+), "device": (\d+), "streams": \{([^}]*)\}, "stream_creation_order": \[([^\]]*)\], "cuda_graphs_from_iteration": -?\d+, "graph_launches": (\d+)\})re");
  for (std::sregex_iterator it(truth.begin(), truth.end(), re), end; it != end; ++it) {
    ConvRank c;
    c.rank = std::stoi((*it)[1]);
    c.pid = std::stoll((*it)[2]);
    c.device = std::stoll((*it)[3]);
    c.streams = (*it)[4];
    c.order = (*it)[5];
    c.graph_launches = std::stoll((*it)[6]);
    m[c.rank] = c;
  }
  std::regex fre(R"re(\{"file": "([^"]+)", "host": "[^"]+", "ranks": \[([0-9,]*)\]\})re");
  for (std::sregex_iterator it(truth.begin(), truth.end(), fre), end; it != end; ++it) {
    std::stringstream ss((*it)[2].str());
    for (std::string r; std::getline(ss, r, ',');) m[std::stoi(r)].file = (*it)[1];
  }
  return m;
}
int stream_of(const ConvRank& c, const std::string& slot) {
  std::smatch m;
  if (!std::regex_search(c.streams, m, std::regex("\"" + slot + "\": (\\d+)"))) return -1;
  return std::stoi(m[1]);
}
std::string pid_is(int64_t pid, const char* col = "globalPid") {
  return std::string(col) + " / 16777216 % 16777216 = " + std::to_string(pid);
}

TEST(SimConventions, RandomExportsAreValidAndCountsMatchTruth) {
  std::set<std::string> seen;  // choices met over the seeds
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    const fs::path dir = tmp_dir("conv" + std::to_string(seed));
    sim::Options o = tiny(dir);
    o.random_conventions = true;
    o.seed = seed;
    sim::generate(o);
    const std::string truth = slurp((dir / "truth.json").string());
    ASSERT_NE(truth.find(R"("conventions": {"mode": "random", "seed": )" + std::to_string(seed)), std::string::npos);
    const bool v30 = truth.find(R"("schema": "3.0.0")") != std::string::npos;
    for (const char* k : {R"("file_layout": "per_host")", R"("device_ids": "zero")", R"("iteration_markers": false)",
                          R"("gpus_per_host": 4)", R"("pids": "same_in_every_file")"})
      if (truth.find(k) != std::string::npos) seen.insert(k);
    const auto pr = per_rank(truth);
    const auto cr = conv_ranks(truth);
    ASSERT_EQ(cr.size(), 8u) << seed;
    const auto ddl = ddl_columns(v30);
    std::set<std::string> files;
    for (auto& [r, c] : cr) files.insert(c.file);
    for (const auto& name : files) {  // every table as the DDL creates it, nothing else
      const std::string f = (dir / name).string();
      for (auto& row : query(f, "SELECT name FROM sqlite_master WHERE type='table'")) {
        ASSERT_TRUE(ddl.count(row[0])) << row[0];
        EXPECT_EQ(columns(f, row[0]), ddl.at(row[0])) << row[0];
      }
      // nsys promises no row order: the kernel rows are not in time order.
      const auto starts = query(f, "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid");
      bool sorted = true;
      for (size_t i = 1; i < starts.size(); ++i) sorted &= std::stoll(starts[i - 1][0]) <= std::stoll(starts[i][0]);
      EXPECT_FALSE(sorted) << name;
      if (!v30) {  // 2026.x: ANALYSIS_DETAILS.startTime on the system clock, events capture-relative
        const auto ad = query(f, "SELECT a.startTime, a.stopTime, a.duration, t.systemClockNs FROM ANALYSIS_DETAILS a, "
                                 "TARGET_INFO_SESSION_START_TIME t")[0];
        EXPECT_EQ(ad[0], ad[3]);
        EXPECT_EQ(std::stoll(ad[1]) - std::stoll(ad[0]), std::stoll(ad[2]));
        EXPECT_GT(std::stoll(ad[0]), scalar(f, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
        EXPECT_LT(scalar(f, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL"), std::stoll(ad[2]));
      }
    }
    for (auto& [r, c] : cr) {
      const std::string f = (dir / c.file).string(), in_proc = " WHERE " + pid_is(c.pid);
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL" + in_proc), pr.at(r).kernels) << r;
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM (" + kNcclKernels + ") k" + in_proc), pr.at(r).nccl) << r;
      EXPECT_EQ(scalar(f, "SELECT count(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL" + in_proc), 1);
      EXPECT_EQ(scalar(f, "SELECT min(deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL" + in_proc), c.device) << r;
      // Every kernel (NCCL ones included) has its launch row in the same process.
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k" + in_proc +
                          " AND NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = "
                          "k.correlationId AND r.globalTid / 16777216 = k.globalPid / 16777216)"), 0) << r;
      // CUDA graphs: one cudaGraphLaunch row per graph, its kernels share the launch's correlationId.
      const int64_t launches = scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON "
                                         "s.id = r.nameId WHERE s.value = 'cudaGraphLaunch_v10000' AND " +
                                         pid_is(c.pid, "r.globalTid"));
      EXPECT_EQ(launches, c.graph_launches) << r;
      const int64_t shared = scalar(f, "SELECT count(*) - count(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_KERNEL" + in_proc);
      if (c.graph_launches > 0) {
        seen.insert("graphs");
        EXPECT_GE(shared, c.graph_launches) << r;
        EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL" + in_proc + " AND graphNodeId IS NOT NULL"),
                  shared + c.graph_launches) << r;
      } else {
        EXPECT_EQ(shared, 0) << r;
      }
      // The streams written are the ones truth names, and only those are listed.
      EXPECT_EQ(scalar(f, "SELECT count(DISTINCT streamId) FROM TARGET_INFO_CUDA_STREAM WHERE processId = " +
                          std::to_string(c.pid)),
                int64_t(std::count(c.order.begin(), c.order.end(), ',') + 1)) << r;
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL" + in_proc + " AND streamId = " +
                          std::to_string(stream_of(c, "compute"))),
                pr.at(r).kernels - pr.at(r).nccl) << r;
    }
    // pids distinct within each file
    for (const auto& name : files) {
      const std::string f = (dir / name).string();
      EXPECT_EQ(scalar(f, "SELECT count(*) - count(DISTINCT pid) FROM PROCESSES"), 0) << name;
    }
    fs::remove_all(dir);
  }
  EXPECT_GE(seen.size(), 4u);  // the seeds cover most of the choices
}

// NCCL streams are numbered per process in first-use order: a stage-0 rank creates its TP stream
// first, a stage-1 rank its pipeline stream (it receives before its first TP all-reduce).
TEST(SimConventions, StreamIdsFollowFirstUseAndDifferAcrossStages) {
  int differ = 0;
  for (uint64_t seed : {11, 12, 13}) {
    const fs::path dir = tmp_dir("streams" + std::to_string(seed));
    sim::Options o = tiny(dir);
    o.random_conventions = true;
    o.seed = seed;
    sim::generate(o);
    const auto cr = conv_ranks(slurp((dir / "truth.json").string()));
    for (int r = 0; r < 8; ++r) {
      const auto& c = cr.at(r);
      const bool stage0 = r < 4;  // 2x2x2: ranks 0-3 are stage 0
      EXPECT_EQ(c.order.substr(0, c.order.find(',', c.order.find(',') + 1)),
                stage0 ? R"("compute", "tp")" : R"("compute", "pp_prev")") << r;
      // In the file: the lowest NCCL stream id carries all-reduces on stage 0, SendRecv on stage 1.
      const std::string f = (dir / c.file).string();
      const auto rows = query(f, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
                                 "k.shortName WHERE " + pid_is(c.pid, "k.globalPid") + " AND k.streamId = (SELECT "
                                 "min(streamId) FROM CUPTI_ACTIVITY_KIND_KERNEL k2 JOIN StringIds s2 ON s2.id = "
                                 "k2.shortName WHERE s2.value LIKE 'nccl%' AND " + pid_is(c.pid, "k2.globalPid") + ") LIMIT 1");
      ASSERT_EQ(rows.size(), 1u);
      EXPECT_NE(rows[0][0].find(stage0 ? "AllReduce" : "SendRecv"), std::string::npos) << r << " " << rows[0][0];
    }
    differ += stream_of(cr.at(0), "tp") != stream_of(cr.at(4), "tp");
    fs::remove_all(dir);
  }
  EXPECT_GE(differ, 2);
}

TEST(SimConventions, FixedConventionsWriteNoConventionsAndRandomIsDeterministic) {
  const fs::path a = tmp_dir("cdet_a"), b = tmp_dir("cdet_b");
  sim::generate(tiny(a));
  EXPECT_EQ(slurp((a / "truth.json").string()).find("\"conventions\""), std::string::npos);
  sim::Options oa = tiny(a), ob = tiny(b);
  oa.random_conventions = ob.random_conventions = true;
  oa.pinned.files = ob.pinned.files = true;  // per-rank files
  oa.threads = 1;
  ob.threads = 3;
  sim::generate(oa);
  sim::generate(ob);
  expect_same_run(a, b);
  ob.conventions_seed = 99;  // other conventions, same run seed
  sim::generate(ob);
  EXPECT_NE(slurp((a / "truth.json").string()), slurp((b / "truth.json").string()));
  fs::remove_all(a);
  fs::remove_all(b);
}

// crash:5:2: rank 5 dies at the start of iteration 2; its capture ends there. The others block in
// their next collective that needs it (launch row and NVTX range, no kernel) and their captures
// run on ~60 s until the watchdog aborts and the job is killed.
void check_crash(const fs::path& dir, bool random) {
  const std::string truth = slurp((dir / "truth.json").string());
  const auto pr = per_rank(truth);
  std::map<int, ConvRank> cr;
  if (random) cr = conv_ranks(truth);
  for (int r = 0; r < 8; ++r)
    if (!random) cr[r] = {r, 1000 + r % 4, r % 4, 0, "rank_" + std::to_string(r) + ".sqlite", "", ""};
  const bool overlap = truth.find(R"("dp_overlap": true)") != std::string::npos;
  EXPECT_EQ(pr.at(5).iterations, 2);
  EXPECT_NE(truth.find(R"("root_cause": [{"kind": "crash", "rank": 5, "host": "node-01", "iteration": 2}])"), std::string::npos)
      << truth;
  EXPECT_NE(truth.find(R"("missing_ranks": [5], "blocked_ranks": [4], "root_cause": true)"), std::string::npos);
  const std::string launch_without_kernel =
      "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value = "
      "'cuLaunchKernelEx' AND {pid} AND NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE "
      "k.correlationId = r.correlationId AND k.globalPid / 16777216 = r.globalTid / 16777216) AND EXISTS (SELECT 1 "
      "FROM NVTX_EVENTS e WHERE e.domainId = 1 AND e.globalTid = r.globalTid AND e.start <= r.start AND e.end >= r.end)";
  auto last_event = [&](const std::string& f, int64_t pid) {
    int64_t t = 0;
    for (const char* tb : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"})
      t = std::max(t, scalar(f, std::string("SELECT coalesce(max(end), 0) FROM ") + tb + " WHERE " + pid_is(pid)));
    for (const char* tb : {"CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"})
      t = std::max(t, scalar(f, std::string("SELECT coalesce(max(coalesce(end, start)), 0) FROM ") + tb + " WHERE " +
                                    pid_is(pid, "globalTid")));
    return t;
  };
  for (int r = 0; r < 8; ++r) {
    const auto& c = cr.at(r);
    const std::string f = (dir / c.file).string();
    const int64_t duration = scalar(f, "SELECT duration FROM ANALYSIS_DETAILS");
    const int64_t last = last_event(f, c.pid);
    const std::string q = std::regex_replace(launch_without_kernel, std::regex("\\{pid\\}"), pid_is(c.pid, "r.globalTid"));
    if (r == 5) {
      EXPECT_EQ(scalar(f, q), 0);
      if (c.file.find("node") == std::string::npos) {  // its own capture ends soon after its last work
        EXPECT_GE(duration, last);
        EXPECT_LT(duration - last, 500'000'000);
      }
      continue;
    }
    // The one blocked launch; with DP overlap (random conventions may draw it) the other replica's
    // ranks (2, 3, 6, 7) launch their 4 gradient buckets, which never run, and go on to the sync.
    EXPECT_EQ(scalar(f, q), overlap && (r / 2) % 2 == 1 ? 4 : 1) << r;
    const int64_t last_kernel = scalar(f, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE " + pid_is(c.pid));
    EXPECT_GT(last - last_kernel, 55'000'000'000) << r;  // the watchdog's abort, ~60 s on
    EXPECT_GE(duration, last) << r;
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value = "
                        "'ncclCommAbort' AND " + pid_is(c.pid, "e.globalTid")), 3) << r;  // tp, pp, dp
  }
}

TEST(SimConventions, CrashEndsTheCrashedCaptureAndLeavesBlockedLaunches) {
  const fs::path dir = tmp_dir("crash");
  sim::Options o = tiny(dir);
  o.iterations = 4;
  o.faults.push_back(sim::parse_fault("crash:5:2"));
  sim::generate(o);
  check_crash(dir, false);
  // Rank 4 (tp peer of 5) wrote as many tp kernels as the crash point's seq.
  std::smatch m;
  const std::string truth = slurp((dir / "truth.json").string());
  ASSERT_TRUE(std::regex_search(truth, m, std::regex(R"re("communicator": "tp-2", "seq": (\d+))re")));
  EXPECT_EQ(scalar((dir / "rank_4.sqlite").string(), "SELECT count(*) FROM (" + kNcclKernels + " AND k.streamId = 13)"),
            std::stoll(m[1]));
  fs::remove_all(dir);
  for (uint64_t seed : {21, 22}) {  // and under random conventions (per-rank or per-host files)
    sim::Options r = tiny(dir);
    r.iterations = 4;
    r.seed = seed;
    r.random_conventions = true;
    r.pinned.hosts = true;
    r.faults.push_back(sim::parse_fault("crash:5:2"));
    sim::generate(r);
    check_crash(dir, true);
    fs::remove_all(dir);
  }
}

TEST(SimConventions, SeveralFaultsAtOnceViaCli) {
  const fs::path dir = tmp_dir("multi");
  const std::string cmd = std::string(SS_SIM_BIN) + " " + dir.string() +
                          " --layout 2x2x2 --hosts 2 --iterations 4 --conventions random --seed 7"
                          " --fault slow_gpu:1:1:1.4 --fault host_delay:6:1:5 --fault crash:3:3 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string truth = slurp((dir / "truth.json").string());
  EXPECT_NE(truth.find(R"("faults": [{"kind": "slow_gpu", "rank": 1, "from_iteration": 1, "factor": 1.4}, )"
                       R"({"kind": "host_delay", "rank": 6, "from_iteration": 1, "ms": 5}, )"
                       R"({"kind": "crash", "rank": 3, "iteration": 3}])"), std::string::npos) << truth;
  EXPECT_NE(truth.find(R"("stragglers": [{"rank": 1, "cause": "slow_gpu", "onset_iteration": 1}, )"
                       R"({"rank": 6, "cause": "host_delay", "onset_iteration": 1}])"), std::string::npos);
  EXPECT_NE(truth.find(R"("root_cause": [{"kind": "crash", "rank": 3)"), std::string::npos);
  EXPECT_NE(truth.find(R"("missing_ranks": [3])"), std::string::npos);
  EXPECT_EQ(per_rank(truth).at(3).iterations, 3);
  EXPECT_NE(std::system((std::string(SS_SIM_BIN) + " " + dir.string() + " --conventions sometimes 2>/dev/null").c_str()), 0);
  fs::remove_all(dir);
}


}  // namespace
