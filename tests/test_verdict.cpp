// The verdict against planted truth: straggler-sim plants a fault (or none), straggler-scan must
// report exactly it. Each test reads the summary JSON (the public contract) and truth.json.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <simdjson.h>
#include "h5_read.hpp"
#include "shell.hpp"

namespace fs = std::filesystem;
using simdjson::dom::element;

namespace {

const std::string kScan = SS_SCAN_BIN, kSim = SS_SIM_BIN;

using testsh::sh;

// Values of a 1-D numeric dataset (a missing one throws: the test fails naming it).
std::vector<double> dataset(const std::string& file, const std::string& path) { return h5read::numbers(file, path); }

struct Analysis {
  simdjson::dom::parser p1, p2;
  element summary, truth;
  std::string report;
};

// Generates a run with `sim_args`, analyses it with `scan_args`; fills summary and truth.
void run(Analysis& r, const std::string& sim_args, const std::string& scan_args = "",
         std::vector<double>* clock_rank = nullptr, std::vector<double>* clock_offset_ms = nullptr,
         std::vector<double>* clock_drift_ppm = nullptr, const std::string& prepare = "") {
  static int n = 0;
  const fs::path dir = fs::temp_directory_path() / ("ss-verdict-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  fs::remove_all(dir);
  int st = 0;
  auto out = sh(kSim + " " + (dir / "run").string() + " " + sim_args, &st);
  ASSERT_EQ(st, 0) << out;
  if (!prepare.empty()) {  // a command run on the generated files first; RUN stands for their folder
    std::string cmd = prepare;
    cmd.replace(cmd.find("RUN"), 3, (dir / "run").string());
    out = sh(cmd, &st);
    ASSERT_EQ(st, 0) << out;
  }
  r.report = sh(kScan + " " + (dir / "run").string() + " -o " + (dir / "out.h5").string() + " --summary " +
                    (dir / "out.json").string() + " " + scan_args,
                &st);
  ASSERT_EQ(st, 0) << r.report;
  ASSERT_EQ(r.p1.load((dir / "out.json").string()).get(r.summary), simdjson::SUCCESS);
  ASSERT_EQ(r.p2.load((dir / "run" / "truth.json").string()).get(r.truth), simdjson::SUCCESS);
  if (clock_rank) *clock_rank = dataset((dir / "out.h5").string(), "/clock/rank");
  if (clock_offset_ms) *clock_offset_ms = dataset((dir / "out.h5").string(), "/clock/offset_ms");
  if (clock_drift_ppm) *clock_drift_ppm = dataset((dir / "out.h5").string(), "/clock/drift_ppm");
  fs::remove_all(dir);
}

size_t count(element e, const char* key) { return simdjson::dom::array(e[key]).size(); }

void expect_healthy(const Analysis& r, const std::string& what) {
  EXPECT_EQ(count(r.summary, "stragglers"), 0u) << what << "\n" << r.report;
  EXPECT_EQ(count(r.summary, "slow_links"), 0u) << what << "\n" << r.report;
  EXPECT_EQ(count(r.summary, "desync"), 0u) << what << "\n" << r.report;
}

// Exactly the planted straggler: rank, cause, onset within 1 of the planted iteration.
void expect_straggler(const Analysis& r, int64_t rank, const std::string& cause, int64_t onset) {
  ASSERT_EQ(count(r.summary, "stragglers"), 1u) << r.report;
  element s = r.summary["stragglers"].at(0);
  EXPECT_EQ(int64_t(s["rank"]), rank) << r.report;
  EXPECT_EQ(std::string_view(s["cause"]), cause) << r.report;
  EXPECT_NEAR(double(int64_t(s["onset_iteration"])), double(onset), 1.0) << r.report;
  EXPECT_GT(double(s["blame_ms"]), 0.0);
  EXPECT_EQ(count(r.summary, "slow_links"), 0u) << r.report;
  EXPECT_EQ(count(r.summary, "desync"), 0u) << r.report;
  // The truth file agrees with what we planted.
  element t = r.truth["expected"]["stragglers"].at(0);
  EXPECT_EQ(int64_t(t["rank"]), rank);
  EXPECT_EQ(std::string_view(t["cause"]), cause);
}

struct Layout {
  const char* layout;
  int hosts;
};
const Layout kLayouts[] = {{"2x2x8", 4}, {"4x2x4", 4}, {"2x4x2", 2}, {"1x2x8", 2}, {"8x1x4", 4}};

std::string sim_args(const Layout& l, int seed, int iterations = 16) {
  return std::string("--layout ") + l.layout + " --hosts " + std::to_string(l.hosts) + " --iterations " +
         std::to_string(iterations) + " --seed " + std::to_string(seed) + " --jitter 0.05";
}

}  // namespace

TEST(Verdict, HealthyRunsWithJitterAreHealthy) {
  for (int seed = 1; seed <= 20; ++seed) {
    const Layout& l = kLayouts[seed % 5];
    Analysis r;
    run(r, sim_args(l, seed) + " --clock-offset-ms " + std::to_string(seed % 11), std::string("--layout ") + l.layout);
    expect_healthy(r, std::string(l.layout) + " seed " + std::to_string(seed));
    EXPECT_EQ(count(r.summary, "change_points"), 0u) << l.layout << " seed " << seed << "\n" << r.report;
  }
}

// Deep pipelines whose one stage boundary crosses hosts: that link is slower than the NVLink ones
// by nature (about 7x in the generator), which is no fault.
TEST(Verdict, HealthyDeepPipelinesAcrossHosts) {
  for (const char* args : {"--layout 1x8x2 --hosts 2 --seed 707", "--layout 2x8x1 --hosts 2 --seed 164",
                           "--layout 1x8x4 --hosts 4 --seed 165"}) {
    Analysis r;
    const std::string a = args;
    run(r, a + " --iterations 12", a.substr(0, a.find(" --hosts")));
    expect_healthy(r, args);
  }
}

TEST(Verdict, HealthyWithoutLayout) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 21));
  expect_healthy(r, "no --layout");
}

TEST(Verdict, SlowGpu) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 3, 20) + " --fault slow_gpu:13:8:1.3", "--layout 2x2x8");
  expect_straggler(r, 13, "slow_gpu", 8);
  ASSERT_EQ(count(r.summary, "change_points"), 1u) << r.report;
  element cp = r.summary["change_points"].at(0);
  EXPECT_NEAR(double(int64_t(cp["iteration"])), 8.0, 1.0);
  EXPECT_EQ(count(cp, "culprit_ranks"), 1u) << r.report;
  EXPECT_EQ(int64_t(cp["culprit_ranks"].at(0)), 13);
}

TEST(Verdict, SlowGpuOtherLayoutNoLayoutGiven) {
  Analysis r;
  run(r, sim_args(kLayouts[1], 4, 18) + " --fault slow_gpu:22:5:1.25");
  expect_straggler(r, 22, "slow_gpu", 5);
}

TEST(Verdict, HostDelay) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 5, 20) + " --fault host_delay:5:6:6", "--layout 2x2x8");
  expect_straggler(r, 5, "host_delay", 6);
}

TEST(Verdict, ExtraWork) {
  Analysis r;
  run(r, sim_args(kLayouts[2], 6, 18) + " --fault extra_work:9:10:1.4", "--layout 2x4x2");
  expect_straggler(r, 9, "extra_work", 10);
}

TEST(Verdict, SlowLinkBetweenTwoHosts) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 7) + " --fault slow_link:0:1:3", "--layout 2x2x8");
  ASSERT_EQ(count(r.summary, "slow_links"), 1u) << r.report;
  element l = r.summary["slow_links"].at(0);
  std::set<std::string> hosts;
  for (element h : simdjson::dom::array(l["hosts"])) hosts.insert(std::string(std::string_view(h)));
  EXPECT_EQ(hosts, (std::set<std::string>{"node-00", "node-01"})) << r.report;
  EXPECT_NEAR(double(l["slowdown"]), 3.0, 0.5);
  for (element s : simdjson::dom::array(r.summary["stragglers"]))
    EXPECT_NE(std::string_view(s["cause"]), "slow_gpu") << r.report;
}

// The slow links straggler-scan can see: a communicator is compared with its like (same kind and
// number of hosts), so a link shows where it slows at most half of them, narrowed down to the hosts
// the slowed communicators share. truth.json's expected slow_links follow the same rule; each case
// names what it checks. No rank is a straggler: the link is the finding.
TEST(Verdict, SlowLinksAcrossLayouts) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"--layout 2x2x8 --hosts 8 --seed 121 --fault slow_link:1:5:3", {"node-01", "node-05"}},  // pp links only
      {"--layout 1x4x4 --hosts 4 --seed 128 --fault slow_link:1:2:3", {"node-01", "node-02"}},  // one stage boundary
      {"--layout 2x2x8 --hosts 4 --seed 126 --fault slow_link:1:1:3", {"node-01"}},             // a host's NIC
      {"--layout 2x2x8 --hosts 8 --seed 120 --fault slow_link:2:3:3",                           // only rings over 0-3
       {"node-00", "node-01", "node-02", "node-03"}},
      {"--layout 1x1x32 --hosts 8 --seed 122 --fault slow_link:6:7:3", {}},  // one ring: nothing to compare with
      {"--layout 2x1x8 --hosts 4 --seed 127 --fault slow_link:0:1:2", {}},   // every DP ring crosses it
      {"--layout 2x2x8 --hosts 4 --seed 30 --fault slow_link:2:3:1.3", {}},  // below the 1.5x threshold
  };
  for (const auto& [args, hosts] : cases) {
    Analysis r;
    const std::string a = args;
    run(r, a + " --iterations 12", a.substr(0, a.find(" --hosts")));
    std::vector<std::string> got, want;
    for (element l : simdjson::dom::array(r.summary["slow_links"]))
      for (element h : simdjson::dom::array(l["hosts"])) got.emplace_back(std::string_view(h));
    for (element l : simdjson::dom::array(r.truth["expected"]["slow_links"]))
      for (element h : simdjson::dom::array(l["hosts"])) want.emplace_back(std::string_view(h));
    EXPECT_EQ(got, hosts) << args << "\n" << r.report;
    EXPECT_EQ(want, hosts) << args << ": truth.json disagrees";
    EXPECT_LE(count(r.summary, "slow_links"), 1u) << args;
    EXPECT_EQ(count(r.summary, "stragglers"), 0u) << args << "\n" << r.report;
  }
}

// A rank that turns slow in the last iterations of a long capture: judged on the stretch after the
// change point, not averaged over the whole run.
TEST(Verdict, LateOnsetIsNotAveragedAway) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 153, 40) + " --fault slow_gpu:3:36:1.4", "--layout 2x2x8");
  expect_straggler(r, 3, "slow_gpu", 36);
  Analysis d;
  run(d, sim_args(kLayouts[0], 152, 16) + " --fault host_delay:3:13:8", "--layout 2x2x8");
  expect_straggler(d, 3, "host_delay", 13);
}

// Pipeline stages of two ranks (TP1 x DP2): the pair alone cannot say which one is slow; small
// and late faults move no job-wide median. Each is found with its onset.
TEST(Verdict, PairRolesAndSmallLateFaults) {
  const std::tuple<const char*, const char*, int64_t, const char*, int64_t> cases[] = {
      {"--layout 1x8x2 --hosts 4 --iterations 30 --seed 26 --jitter 0.1", "slow_gpu:15:1:1.3", 15, "slow_gpu", 1},
      {"--layout 1x8x2 --hosts 4 --iterations 30 --seed 26 --jitter 0.1", "extra_work:15:10:1.3", 15, "extra_work", 10},
      {"--layout 2x2x8 --hosts 4 --iterations 20 --seed 54 --jitter 0.05", "host_delay:20:14:3", 20, "host_delay", 14},
      {"--layout 2x4x4 --hosts 4 --iterations 20 --seed 21 --jitter 0.08", "slow_gpu:9:17:1.15", 9, "slow_gpu", 17},
  };
  for (const auto& [base, fault, rank, cause, onset] : cases) {
    Analysis r;
    const std::string a = base;
    run(r, a + " --fault " + fault, a.substr(0, a.find(" --hosts")));
    SCOPED_TRACE(std::string(base) + " " + fault);
    expect_straggler(r, rank, cause, onset);
  }
}

// A small host delay (2 ms in an 81 ms step, 2.5% of the run) is still found.
TEST(Verdict, SmallHostDelay) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 132, 16) + " --fault host_delay:25:4:2", "--layout 2x2x8");
  expect_straggler(r, 25, "host_delay", 4);
}

TEST(Verdict, ClockOffsetsAreCorrectedAndChangeNothing) {
  Analysis plain, shifted, uncorrected;
  const std::string fault = " --fault slow_gpu:20:6:1.3";
  run(plain, sim_args(kLayouts[0], 8, 18) + fault, "--layout 2x2x8");
  std::vector<double> rank, offset;
  run(shifted, sim_args(kLayouts[0], 8, 18) + fault + " --clock-offset-ms 10", "--layout 2x2x8", &rank, &offset);
  // Every rank's offset within 50 us of its host's planted NTP error (host 0 = rank 0's = 0).
  ASSERT_EQ(rank.size(), 32u);
  ASSERT_EQ(offset.size(), 32u);
  for (element h : simdjson::dom::array(shifted.truth["hosts"]))
    for (element r : simdjson::dom::array(h["ranks"])) {
      const auto i = size_t(int64_t(r));
      EXPECT_EQ(rank[i], double(i));
      EXPECT_NEAR(offset[i] * 1e6, double(int64_t(h["clock_offset_ns"])), 50'000) << "rank " << i;
    }
  run(uncorrected, sim_args(kLayouts[0], 8, 18) + fault + " --clock-offset-ms 10", "--layout 2x2x8 --no-clock-correction");
  expect_straggler(plain, 20, "slow_gpu", 6);
  expect_straggler(shifted, 20, "slow_gpu", 6);
  // Offsets recovered to within 50 us of the planted host errors (relative to rank 0's host).
  const double planted = std::abs(double(int64_t(shifted.truth["hosts"].at(2)["clock_offset_ns"])));
  element clock = shifted.summary["clock"];
  EXPECT_GT(planted, 1e6);
  EXPECT_EQ(int64_t(clock["violations_after"]), 0) << shifted.report;
  EXPECT_GT(int64_t(clock["violations_before"]), 0);
  double max_planted = 0;
  for (element h : simdjson::dom::array(shifted.truth["hosts"]))
    max_planted = std::max(max_planted, std::abs(double(int64_t(h["clock_offset_ns"]))));
  EXPECT_NEAR(double(clock["max_offset_ms"]) * 1e6, max_planted, 50'000) << shifted.report;
  // Without the correction the host clocks (off by milliseconds) break the clock condition and
  // decide who looks late in each op; the verdict still holds because a rank's onset is also
  // judged against its own baseline (constant offsets cancel); the per-op waits are still wrong.
  element u = uncorrected.summary;
  EXPECT_GT(int64_t(u["clock"]["violations_after"]), 0);
}

// Host clocks that also run at different rates (up to 50 ppm: 100 us over a 2 s capture, more
// than the 50 us offset tolerance) are fitted with a drift per rank; the verdict is unchanged.
TEST(Verdict, ClockDriftIsFittedAndChangesNothing) {
  Analysis r;
  std::vector<double> rank, offset, drift;
  run(r, sim_args(kLayouts[0], 8, 24) + " --fault slow_gpu:20:6:1.3 --clock-offset-ms 10 --clock-drift-ppm 50",
      "--layout 2x2x8", &rank, &offset, &drift);
  expect_straggler(r, 20, "slow_gpu", 6);
  EXPECT_EQ(int64_t(r.summary["clock"]["violations_after"]), 0) << r.report;
  ASSERT_EQ(drift.size(), 32u);
  double max_planted = 0;
  for (element h : simdjson::dom::array(r.truth["hosts"])) {
    const double planted = double(h["clock_drift_ppm"]);
    max_planted = std::max(max_planted, std::abs(planted));
    for (element k : simdjson::dom::array(h["ranks"])) {
      const auto i = size_t(int64_t(k));
      EXPECT_EQ(rank[i], double(i));
      EXPECT_NEAR(drift[i], planted, 1.0) << "rank " << i;
    }
  }
  EXPECT_GT(max_planted, 20.0);  // the seed plants a drift that matters
}

// The summary's desync rows against truth.json: the tool numbers a pipeline link "pp-N:s-t"'s ops
// per link, the generator per group over all its links; the per-link seqs of one missing rank
// sum to its group seq.
void expect_desync_as_planted(const Analysis& r) {
  std::map<std::pair<std::string, int64_t>, int64_t> got;  // (communicator, missing rank) -> seq
  std::set<std::tuple<std::string, int64_t, int64_t>> want, got_rows;
  for (element d : simdjson::dom::array(r.summary["desync"])) {
    std::string name{std::string_view(d["communicator"])};
    if (name.find(':') != std::string::npos) name = name.substr(0, name.find(':'));
    ASSERT_EQ(count(d, "missing_ranks"), 1u) << r.report;
    got[{name, int64_t(d["missing_ranks"].at(0))}] += int64_t(d["seq"]);
  }
  for (auto& [k, seq] : got) got_rows.insert({k.first, seq, k.second});
  for (element d : simdjson::dom::array(r.truth["expected"]["desync"]))
    want.insert({std::string(std::string_view(d["communicator"])), int64_t(d["seq"]), int64_t(d["missing_ranks"].at(0))});
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(got_rows, want) << r.report;
}

TEST(Verdict, HangIsADesyncWithTheFirstMissingOp) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 9, 16) + " --fault hang:9:11", "--layout 2x2x8");
  EXPECT_EQ(count(r.summary, "stragglers"), 0u) << r.report;
  expect_desync_as_planted(r);
  // Stopped in the first steady iteration: no iteration left to judge stragglers on (once crashed).
  Analysis early;
  run(early, sim_args(kLayouts[0], 144, 16) + " --fault hang:20:1", "--layout 2x2x8");
  EXPECT_EQ(count(early.summary, "stragglers"), 0u) << early.report;
  expect_desync_as_planted(early);
  // Stopped before its first kernel: its profile is empty (a failure), and the ranks missing from
  // collectives are all blocked elsewhere; none of them is named as the one that stopped.
  Analysis warmup;
  run(warmup, sim_args(kLayouts[0], 5, 16) + " --fault hang:20:0", "--layout 2x2x8");
  EXPECT_EQ(count(warmup.summary, "stragglers"), 0u) << warmup.report;
  EXPECT_EQ(count(warmup.summary, "desync"), 0u) << warmup.report;
  ASSERT_EQ(count(warmup.summary, "ranks_failed"), 1u) << warmup.report;
  EXPECT_EQ(int64_t(warmup.summary["ranks_failed"].at(0)["rank"]), 20);
  EXPECT_NE(warmup.report.find("the rank that stopped is not among the profiles read"), std::string::npos)
      << warmup.report;
}

// Batched p2p: each rank runs both pipeline neighbours on one stream. A hang and a crash in a
// middle stage still give every link's first missing op (the blocked neighbour's pending launch is
// placed on its link by the stream's repeating pattern of links).
TEST(Verdict, HangAndCrashWithOneP2pStreamPerRank) {
  for (const char* fault : {"hang:13:5", "crash:13:5", "hang:5:6"}) {
    Analysis r;
    run(r, std::string("--layout 2x4x4 --hosts 4 --iterations 10 --seed 7 --clock-offset-ms 2 --p2p-streams group --fault ") + fault);
    SCOPED_TRACE(fault);
    EXPECT_EQ(count(r.summary, "stragglers"), 0u) << r.report;
    if (std::string(fault).rfind("hang", 0) == 0) {
      expect_desync_as_planted(r);
      continue;
    }
    // A crash's truth lists the victims' rows too: its root-cause rows must be the summary's.
    std::map<std::pair<std::string, int64_t>, int64_t> got;
    for (element d : simdjson::dom::array(r.summary["desync"])) {
      std::string name{std::string_view(d["communicator"])};
      got[{name.substr(0, name.find(':')), int64_t(d["missing_ranks"].at(0))}] += int64_t(d["seq"]);
    }
    size_t roots = 0;
    for (element d : simdjson::dom::array(r.truth["expected"]["desync"]))
      if (bool(d["root_cause"])) {
        ++roots;
        const std::pair<std::string, int64_t> key{std::string(std::string_view(d["communicator"])), int64_t(d["missing_ranks"].at(0))};
        EXPECT_EQ(got[key], int64_t(d["seq"])) << key.first << "\n" << r.report;
      }
    EXPECT_GE(roots, 3u);
  }
}

// Deeper pipelines: the stages upstream of the hung rank block in their p2p and never reach their
// own all-reduces; they are victims (HDF5 /desync, root_cause 0), not the culprit, nor stragglers.
TEST(Verdict, HangInADeepPipelineNamesOnlyTheStoppedRank) {
  const std::pair<const char*, std::set<std::tuple<std::string, int64_t, int64_t>>> cases[] = {
      {"--seed 226 --fault hang:31:5", {{"dp-3", 20, 31}, {"pp-7:2-3", 25, 31}}},
      {"--seed 229 --fault hang:12:7 --clock-offset-ms 10", {{"dp-1", 28, 12}, {"pp-4:0-1", 49, 12}, {"pp-4:1-2", 42, 12}}},
  };
  for (const auto& [args, rows] : cases) {
    Analysis r;
    run(r, std::string("--layout 1x4x8 --hosts 4 --iterations 14 ") + args, "--layout 1x4x8");
    EXPECT_EQ(count(r.summary, "stragglers"), 0u) << args << "\n" << r.report;
    std::set<std::tuple<std::string, int64_t, int64_t>> got;
    for (element d : simdjson::dom::array(r.summary["desync"]))
      got.insert({std::string(std::string_view(d["communicator"])), int64_t(d["seq"]), int64_t(d["missing_ranks"].at(0))});
    EXPECT_EQ(got, rows) << args << "\n" << r.report;
    expect_desync_as_planted(r);
  }
}

// A rank whose capture simply ends earlier (its nsys stopped first) is no desync and makes no one a
// straggler: its events after 70% of the run are cut and its session stops at its last kernel.
TEST(Verdict, CaptureEndingEarlyIsNotADesync) {
  const std::string trim =
      "/usr/bin/python3 -c \"import sqlite3; db = sqlite3.connect('RUN/rank_5.sqlite'); "
      "ts = ['CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'CUPTI_ACTIVITY_KIND_MEMCPY', "
      "'CUPTI_ACTIVITY_KIND_MEMSET', 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION', 'NVTX_EVENTS']; "
      "ts = [t for t in ts if db.execute('select count(*) from sqlite_master where name=?', (t,)).fetchone()[0]]; "
      "lo = min(db.execute(f'select min(start) from {t}').fetchone()[0] for t in ts); "
      "hi = max(db.execute(f'select max(coalesce(end, start)) from {t}').fetchone()[0] for t in ts); "
      "cut = lo + 0.7 * (hi - lo); [db.execute(f'delete from {t} where start > ?', (cut,)) for t in ts]; "
      "db.execute('update ANALYSIS_DETAILS set stopTime = (select max(end) from CUPTI_ACTIVITY_KIND_KERNEL)'); "
      "db.commit()\"";
  Analysis r;
  run(r, sim_args(kLayouts[0], 171, 12), "--layout 2x2x8", nullptr, nullptr, nullptr, trim);
  EXPECT_EQ(count(r.summary, "desync"), 0u) << r.report;
  EXPECT_EQ(count(r.summary, "stragglers"), 0u) << r.report;
  EXPECT_NE(r.report.find("capture"), std::string::npos) << r.report;
}

TEST(Verdict, SameVerdictUnderMpirun) {
  Analysis one, two;
  run(one, sim_args(kLayouts[0], 10, 16) + " --fault host_delay:17:4:6", "--layout 2x2x8");
  expect_straggler(one, 17, "host_delay", 4);
  // The same run analysed by 3 processes (communicators owned by different processes).
  int st = 0;
  const fs::path dir = fs::temp_directory_path() / ("ss-verdict-mpi-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  sh(kSim + " " + (dir / "run").string() + " " + sim_args(kLayouts[0], 10, 16) + " --fault host_delay:17:4:6", &st);
  auto out = sh("mpirun -n 3 --oversubscribe " + kScan + " " + (dir / "run").string() + " -q -o " +
                    (dir / "o.h5").string() + " --summary " + (dir / "o.json").string() + " --layout 2x2x8",
                &st);
  ASSERT_EQ(st, 0) << out;
  ASSERT_EQ(two.p1.load((dir / "o.json").string()).get(two.summary), simdjson::SUCCESS);
  EXPECT_EQ(simdjson::to_string(two.summary["stragglers"]), simdjson::to_string(one.summary["stragglers"]));
  EXPECT_EQ(simdjson::to_string(two.summary["clock"]), simdjson::to_string(one.summary["clock"]));
  fs::remove_all(dir);
}

// The real 2-rank torchrun capture (one host, one file): every SendRecv kernel is matched with its
// peer, the shared clock needs no correction, and waits/lateness equal what the sqlite3 CLI gives:
//   pair the NCCL kernels of pids 144/145 by start order (33 each); last = later start;
//   rank 0 last 11 times, rank 1 22 times; waits 10.898336 ms and 2.477480 ms.
TEST(Verdict, RealTwoRankSendRecvProfile) {
  const std::string file = std::string(SS_SHARED_DIR) + "/data/real/nsysai_mfu_2gpu_before.sqlite";
  if (!fs::exists(file)) GTEST_SKIP() << file << " absent (../shared/data/real)";
  const fs::path dir = fs::temp_directory_path() / ("ss-verdict-real-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  int st = 0;
  auto out = sh(kScan + " " + file + " -o " + (dir / "o.h5").string() + " --summary " + (dir / "o.json").string(), &st);
  ASSERT_EQ(st, 0) << out;
  simdjson::dom::parser p;
  element s;
  ASSERT_EQ(p.load((dir / "o.json").string()).get(s), simdjson::SUCCESS);
  EXPECT_EQ(int64_t(s["ranks"]), 2);
  EXPECT_EQ(count(s, "desync"), 0u) << out;  // the capture was cut mid-collective: not a hang
  EXPECT_LT(double(s["clock"]["max_offset_ms"]), 1e-6);
  const std::string h5 = (dir / "o.h5").string();
  EXPECT_EQ(h5read::numbers<int64_t>(h5, "/collectives/communicators/matched_ops"), std::vector<int64_t>{33});
  EXPECT_EQ(h5read::numbers<int64_t>(h5, "/collectives/communicators/size"), std::vector<int64_t>{2});
  EXPECT_EQ(h5read::numbers<int64_t>(h5, "/ranks/late_count"), (std::vector<int64_t>{11, 22}));  // times last
  const auto wait_ms = h5read::numbers(h5, "/ranks/wait_ms");
  ASSERT_EQ(wait_ms.size(), 2u);
  EXPECT_NEAR(wait_ms[0], 10.8983, 1e-4);
  EXPECT_NEAR(wait_ms[1], 2.47748, 1e-5);
  // Every NCCL kernel is in a matched op.
  EXPECT_EQ(h5read::numbers<int64_t>(h5, "/ranks/collective_ops"), (std::vector<int64_t>{33, 33}));
  fs::remove_all(dir);
}

// A slow pipeline stage is the pipeline's bottleneck, not a straggler: its ranks are compared with
// their stage peers, which are just as slow.
TEST(Verdict, StageImbalanceIsNotAStraggler) {
  Analysis r;
  run(r, sim_args(kLayouts[0], 12, 14) + " --fault stage_imbalance:1:1.3", "--layout 2x2x8");
  expect_healthy(r, "stage imbalance");
  EXPECT_EQ(int64_t(r.truth["expected"]["pipeline"]["bottleneck_stage"]), 1);
}

// Issue shapes with random export conventions (per-process stream numbering, device ids, markers
// or not, per-host files...): the layout is inferred exactly, host clocks within 50 us (also where
// only pipeline p2p crosses hosts), and the verdict is the same with and without --layout.
TEST(Verdict, LayoutInferredOnIssueShapesWithRandomConventions) {
  struct Shape {
    const char* layout;
    int hosts, tp, pp, dp, victim, iterations;
  };
  const Shape shapes[] = {{"2x2x4", 4, 2, 2, 4, 9, 12}, {"2x4x4", 4, 2, 4, 4, 21, 12},
                          {"4x2x8", 8, 4, 2, 8, 45, 10}, {"8x4x16", 64, 8, 4, 16, 300, 5}};
  for (const auto& s : shapes) {
    SCOPED_TRACE(s.layout);
    const std::string sim = std::string("--layout ") + s.layout + " --hosts " + std::to_string(s.hosts) +
                            " --iterations " + std::to_string(s.iterations) + " --layers " + (s.pp == 4 && s.tp == 8 ? "1" : "2") +
                            " --seed 11 --clock-offset-ms 3 --conventions random --fault slow_gpu:" + std::to_string(s.victim) +
                            ":2:1.4";
    Analysis inferred, given;
    std::vector<double> rank, offset;
    run(inferred, sim, "", &rank, &offset);
    run(given, sim, std::string("--layout ") + s.layout);
    element l = inferred.summary["layout"];
    ASSERT_EQ(l.type(), simdjson::dom::element_type::OBJECT) << inferred.report;
    EXPECT_EQ(int64_t(l["tp"]), s.tp) << inferred.report;
    EXPECT_EQ(int64_t(l["pp"]), s.pp) << inferred.report;
    EXPECT_EQ(int64_t(l["dp"]), s.dp) << inferred.report;
    EXPECT_EQ(std::string_view(l["source"]), "inferred");
    EXPECT_EQ(std::string_view(given.summary["layout"]["source"]), "given");
    expect_straggler(inferred, s.victim, "slow_gpu", 2);
    expect_straggler(given, s.victim, "slow_gpu", 2);
    std::map<int64_t, double> planted;
    for (element h : simdjson::dom::array(inferred.truth["hosts"]))
      for (element r : simdjson::dom::array(h["ranks"])) planted[int64_t(r)] = double(int64_t(h["clock_offset_ns"])) / 1e6;
    ASSERT_EQ(rank.size(), planted.size());
    for (size_t i = 0; i < rank.size(); ++i)
      EXPECT_NEAR(offset[i], planted[int64_t(rank[i])], 0.05) << "rank " << rank[i];
  }
}

// Root blame (collectives/root_blame.hpp): with one slow GPU its TP partner and pipeline neighbours
// also come last (they waited on it, then hold their own peers), so their direct blame is of the
// same order; the chains start at the slow rank, whose root blame is at least 3x any other's.
void root_blame_names(const std::string& args, int slow_rank) {
  const fs::path dir = fs::temp_directory_path() / ("ss-rootblame-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int st = 0;
  auto out = sh(kSim + " " + (dir / "run").string() + " " + args + " --fault slow_gpu:" + std::to_string(slow_rank) + ":2:1.3", &st);
  ASSERT_EQ(st, 0) << out;
  out = sh(kScan + " " + (dir / "run").string() + " -o " + (dir / "out.h5").string(), &st);
  ASSERT_EQ(st, 0) << out;
  const auto direct = dataset((dir / "out.h5").string(), "/ranks/blame_ms");
  const auto root = dataset((dir / "out.h5").string(), "/ranks/root_blame_ms");
  const auto rank = dataset((dir / "out.h5").string(), "/ranks/rank");
  fs::remove_all(dir);
  ASSERT_EQ(root.size(), rank.size());
  double slow = -1, slow_direct = -1, other = 0, other_direct = 0, sum_direct = 0, sum_root = 0;
  for (size_t i = 0; i < rank.size(); ++i) {
    sum_direct += direct[i], sum_root += root[i];
    if (rank[i] == slow_rank) slow = root[i], slow_direct = direct[i];
    else other = std::max(other, root[i]), other_direct = std::max(other_direct, direct[i]);
  }
  EXPECT_GE(slow, 3 * other) << "root blame of rank " << slow_rank << ": " << slow << " ms, largest other " << other << " ms";
  // Victims carry direct blame of the same order (else the test shows nothing).
  EXPECT_GT(other_direct, 0.5 * slow_direct) << other_direct << " vs " << slow_direct;
  EXPECT_NEAR(sum_root, sum_direct, 1e-6 * sum_direct + 1e-9);
}

TEST(Verdict, RootBlameNamesTheStragglerNotItsVictims) { root_blame_names(sim_args(kLayouts[0], 3, 16), 13); }

// At 512 ranks (TP8 x PP4 x DP16) a slow GPU's pipeline keeps waiting on it through 1F1B's sends
// and receives, and the data-parallel all-reduces spread its delay over every replica.
TEST(Verdict, RootBlameNamesTheStragglerAt512Ranks) {
  root_blame_names("--layout 8x4x16 --hosts 64 --iterations 8 --seed 5", 300);
}
