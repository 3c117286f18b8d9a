// straggler-sim --dp-overlap: the data-parallel gradient all-reduces run on the DP stream during the
// last microbatch's backward; in a crash run the DP peers' buckets never run while the rest of their
// backward does. Without the option (fixed conventions) the output is what it always was.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "conventions.hpp"
#include "sim.hpp"
#include "sim_fixture.hpp"

namespace {

using namespace simtest;

// tiny(): 2x2x2 on 2 hosts, rank = tp + 2 dp + 4 pp; fixed stream ids: compute 7, tp 13, dp 21.
std::string pid_is(int64_t pid, const char* col) { return std::string(col) + " / 16777216 % 16777216 = " + std::to_string(pid); }


// Pairs of (DP-stream kernel, compute-stream kernel) of a one-process file that run at the same time.
int64_t dp_compute_overlaps(const std::string& f) {
  return scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL d, CUPTI_ACTIVITY_KIND_KERNEL c WHERE "
                   "d.streamId = 21 AND c.streamId = 7 AND c.start < d.end AND c.end > d.start");
}

TEST(SimOverlap, DpAllReducesOverlapComputeOnAnotherStream) {
  for (bool overlap : {false, true}) {
    const fs::path dir = tmp_dir("ovl_healthy");
    sim::Options o = tiny(dir);
    o.iterations = 4;
    o.dp_overlap = overlap;
    sim::generate(o);
    const std::string truth = slurp((dir / "truth.json").string());
    EXPECT_EQ(truth.find(R"("conventions": {"mode": "fixed", "dp_overlap": true})") != std::string::npos, overlap);
    for (auto& [r, t] : per_rank(truth)) {
      const std::string f = rank_file(dir, r);
      EXPECT_EQ(t.iterations, 4) << r;
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), t.kernels) << r;
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM NVTX_EVENTS WHERE domainId = 0 AND text LIKE 'ProfilerStep#%'"), 4);
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE streamId = 21"), 16) << r;  // 4 buckets
      const int64_t both = dp_compute_overlaps(f);
      if (overlap) EXPECT_GT(both, 0) << r << ": DP all-reduces run beside the backward";
      else EXPECT_EQ(both, 0) << r << ": DP all-reduces after the last backward";
      // The optimizer still waits for every bucket of its iteration: each ProfilerStep's first
      // multi_tensor_apply starts after the step's last DP kernel ends.
      EXPECT_EQ(scalar(f, "SELECT count(*) FROM NVTX_EVENTS p WHERE p.text LIKE 'ProfilerStep#%' AND "
                          "(SELECT min(k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                          " WHERE s.value = 'multi_tensor_apply_kernel' AND k.start BETWEEN p.start AND p.end) < "
                          "(SELECT max(k.end) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.streamId = 21 AND "
                          " k.start BETWEEN p.start AND p.end)"), 0) << r;
    }
    fs::remove_all(dir);
  }
}

// The fixed output without --dp-overlap is byte for byte the generator's before the option (these
// constants are the original generator's rows, as HealthyOutputIsUnchanged's): crash and hang runs.
TEST(SimOverlap, FixedOutputWithoutTheFlagIsUnchanged) {
  const std::map<std::string, uint64_t> golden = {{"crash:5:2", 0x00ce11db470cf045ull}, {"hang:3:2", 0x3b09c09132d6b7d9ull}};
  for (auto& [fault, hash] : golden) {
    const fs::path dir = tmp_dir("ovl_golden");
    sim::Options o = tiny(dir);
    o.iterations = 4;
    o.faults.push_back(sim::parse_fault(fault));
    sim::generate(o);
    EXPECT_EQ(content_hash(dir, 8), hash) << fault;
    EXPECT_EQ(slurp((dir / "truth.json").string()).find("\"conventions\""), std::string::npos);
    fs::remove_all(dir);
  }
}

// --conventions random draws the overlap per run (about half), unless pinned.
TEST(SimOverlap, RandomConventionsDrawItUnlessPinned) {
  int on = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    sim::Options o = tiny(tmp_dir("unused"));
    o.random_conventions = true;
    o.seed = seed;
    sim::Options pinned = o;
    sim::resolve_conventions(o);
    on += o.dp_overlap;
    pinned.pinned.dp_overlap = true;
    pinned.dp_overlap = !o.dp_overlap;
    sim::resolve_conventions(pinned);
    EXPECT_EQ(pinned.dp_overlap, !o.dp_overlap) << seed;
    EXPECT_EQ(pinned.schema30, o.schema30) << seed;  // the other choices stay as drawn
    EXPECT_EQ(pinned.per_host_files, o.per_host_files) << seed;
    EXPECT_EQ(pinned.p2p_one_stream, o.p2p_one_stream) << seed;
  }
  EXPECT_GT(on, 10);
  EXPECT_LT(on, 30);
  const fs::path dir = tmp_dir("ovl_cli");
  const std::string cmd = std::string(SS_SIM_BIN) + " " + dir.string() +
                          " --layout 2x2x2 --hosts 2 --iterations 2 --conventions random --seed 3 --dp-overlap 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_NE(slurp((dir / "truth.json").string()).find(R"("dp_overlap": true)"), std::string::npos);
  EXPECT_NE(std::system((std::string(SS_SIM_BIN) + " " + dir.string() + " --dp-overlap --no-dp-overlap 2>/dev/null").c_str()), 0);
  fs::remove_all(dir);
}

// What one rank process looks like in a crash run: its file, pid and stream ids (fixed or random conventions).
struct Proc {
  std::string file;
  int64_t pid = 0, compute = 7, dp = 21;
};
std::map<int, Proc> procs(const fs::path& dir, const std::string& truth, bool random) {
  std::map<int, Proc> m;
  for (int r = 0; r < 8; ++r) m[r] = {rank_file(dir, r), 1000 + r % 4, 7, 21};
  if (!random) return m;
  std::regex re(R"re(\{"rank": (\d+), "pid": (\d+), "device": \d+, "streams": \{"compute": (\d+)[^}]*"dp": (\d+))re");
  for (std::sregex_iterator it(truth.begin(), truth.end(), re), end; it != end; ++it)
    m[std::stoi((*it)[1])] = {"", std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4])};
  std::regex fre(R"re(\{"file": "([^"]+)", "host": "[^"]+", "ranks": \[([0-9,]*)\]\})re");
  for (std::sregex_iterator it(truth.begin(), truth.end(), fre), end; it != end; ++it) {
    std::stringstream ss((*it)[2].str());
    for (std::string r; std::getline(ss, r, ',');) m[std::stoi(r)].file = (dir / (*it)[1].str()).string();
  }
  return m;
}

// crash:5:2 with overlap. Rank 5 dies at the start of iteration 2. Its DP peer 7 (and 6, 2, 3, whose
// DP peers 4, 1, 0 are blocked victims) launch their iteration-2 buckets, which never run (launch row
// in its NVTX range or right after it, no kernel), while their backward and TP all-reduces go on to the end; their host
// then launches the optimizer (no kernels: the compute stream waits for the buckets) and blocks in the
// sync; the watchdog aborts ~60 s after the first blocked launch.
void check_overlap_crash(const fs::path& dir, bool random) {
  const std::string truth = slurp((dir / "truth.json").string());
  ASSERT_NE(truth.find(R"("dp_overlap": true)"), std::string::npos);
  // Desync truth: the first bucket of iteration 2 (seq 8) on every DP communicator.
  EXPECT_NE(truth.find(R"({"communicator": "dp-3", "seq": 8, "missing_ranks": [5], "blocked_ranks": [7], "root_cause": true})"),
            std::string::npos) << truth;
  EXPECT_NE(truth.find(R"({"communicator": "dp-2", "seq": 8, "missing_ranks": [4], "blocked_ranks": [6], "root_cause": false})"),
            std::string::npos);
  EXPECT_NE(truth.find(R"({"communicator": "tp-2", "seq": 128, "missing_ranks": [5], "blocked_ranks": [4], "root_cause": true})"),
            std::string::npos);
  EXPECT_EQ(truth.find(R"("communicator": "tp-3")"), std::string::npos) << "tp-3 (6, 7) all ran: no desync";
  const auto pr = per_rank(truth);
  const auto pp = procs(dir, truth, random);
  for (int r : {2, 3, 6, 7}) {
    const Proc& p = pp.at(r);
    const std::string f = p.file, rt = pid_is(p.pid, "r.globalTid"), kp = pid_is(p.pid, "k.globalPid");
    const std::string no_kernel = " AND NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.correlationId = "
                                  "r.correlationId AND " + kp + ")";
    const std::string blocked =
        "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value = 'cuLaunchKernelEx' AND " +
        rt + no_kernel + " AND EXISTS (SELECT 1 FROM NVTX_EVENTS e WHERE e.domainId = 1 AND e.globalTid = r.globalTid "
        "AND e.start <= r.start AND e.end >= r.start)";  // inside the range, or right after it (random conventions)
    EXPECT_EQ(scalar(f, "SELECT count(*) " + blocked), 4) << r << ": the 4 buckets of iteration 2";
    const int64_t first = scalar(f, "SELECT min(r.start) " + blocked);
    // Other streams' kernels end after the blocked launch (the backward went on)...
    EXPECT_GT(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE " + kp + " AND k.streamId <> " +
                        std::to_string(p.dp) + " AND k.end > " + std::to_string(first)), 50) << r;
    // ... compute and TP all-reduces both, and nothing on the DP stream after it.
    EXPECT_GT(scalar(f, "SELECT count(*) FROM (" + kNcclKernels + ") k WHERE " + kp + " AND k.streamId <> " +
                        std::to_string(p.dp) + " AND k.end > " + std::to_string(first)), 4) << r;
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE " + kp + " AND k.streamId = " +
                        std::to_string(p.dp) + " AND k.end > " + std::to_string(first)), 0) << r;
    // The optimizer's launches have no kernels; the sync that never returns is not written.
    EXPECT_GE(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE "
                        "s.value IN ('cudaLaunchKernel_v7000', 'cudaGraphLaunch_v10000') AND " + rt + no_kernel), 1) << r;
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE "
                        "s.value = 'cudaStreamSynchronize_v3020' AND r.start > " + std::to_string(first) + " AND " + rt), 0);
    EXPECT_EQ(pr.at(r).iterations, 2) << r;
    const int64_t abort = scalar(f, "SELECT min(e.start) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE "
                                    "s.value = 'ncclCommAbort' AND " + pid_is(p.pid, "e.globalTid"));
    EXPECT_GE(abort - first, 59'990'000'000) << r;
    EXPECT_LT(abort - first, 62'000'000'000) << r;
  }
  // The crashed rank's replica blocks in a collective, as without overlap: one blocked launch each.
  for (int r : {0, 1, 4}) {
    const Proc& p = pp.at(r);
    EXPECT_EQ(scalar(p.file, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                             "WHERE s.value = 'cuLaunchKernelEx' AND " + pid_is(p.pid, "r.globalTid") +
                             " AND NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.correlationId = "
                             "r.correlationId AND " + pid_is(p.pid, "k.globalPid") + ")"), 1) << r;
  }
}

TEST(SimOverlap, CrashLeavesBucketsPendingWhileOtherStreamsRunOn) {
  const fs::path dir = tmp_dir("ovl_crash");
  sim::Options o = tiny(dir);
  o.iterations = 4;
  o.dp_overlap = true;
  o.faults.push_back(sim::parse_fault("crash:5:2"));
  sim::generate(o);
  check_overlap_crash(dir, false);
  fs::remove_all(dir);
  for (bool per_host : {false, true}) {  // random conventions, schema 3.0, per-rank and per-host files
    sim::Options r = o;
    r.random_conventions = true;
    r.seed = per_host ? 31 : 32;
    r.pinned.hosts = r.pinned.schema = r.pinned.files = r.pinned.dp_overlap = true;
    r.schema30 = true;
    r.per_host_files = per_host;
    sim::generate(r);
    check_overlap_crash(dir, true);
    fs::remove_all(dir);
  }
}

// hang keeps its ending (every capture ends 2 s after the last event) and its desync rows; with
// overlap the DP peers also run on to the iteration's sync.
TEST(SimOverlap, HangKeepsItsTruth) {
  std::string rows[2];
  for (bool overlap : {false, true}) {
    const fs::path dir = tmp_dir("ovl_hang");
    sim::Options o = tiny(dir);
    o.iterations = 4;
    o.dp_overlap = overlap;
    o.faults.push_back(sim::parse_fault("hang:5:2"));
    ASSERT_NO_THROW(sim::generate(o));
    const std::string truth = slurp((dir / "truth.json").string());
    // The desync rows (the pipeline's bubble after them differs: overlap moves the DP buckets).
    const size_t at = truth.find("\"desync\"");
    rows[overlap] = truth.substr(at, truth.find("\"pipeline\"", at) - at);
    for (auto& [r, t] : per_rank(truth)) EXPECT_EQ(t.iterations, 2) << r;
    fs::remove_all(dir);
  }
  EXPECT_EQ(rows[0], rows[1]);
}

}  // namespace
