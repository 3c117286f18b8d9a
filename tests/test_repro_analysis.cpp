// Issue 8, analysis side: the defect reproducers D1 (pending_ops out of bounds on lost or
// shared correlationIds), D2 (std::regex stack overflow on long NVTX names) and D10 (signed
// overflow on extreme timestamps). Unit tests on hand-built timelines (under the sanitizer build
// any UB fails them), then end-to-end runs of generated profiles edited with SQLite.
#include <gtest/gtest.h>

#include <chrono>
#include <simdjson.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "collectives/collective_op.hpp"
#include "collectives/communicators.hpp"
#include "collectives/replay.hpp"
#include "ranks/changepoint.hpp"
#include "ranks/iteration_work.hpp"
#include "ranks/iterations.hpp"
#include "ranks/metrics.hpp"
#include "ranks/sat_math.hpp"
#include "shell.hpp"
#include "sqlite_edit.hpp"
#include "timeline_builder.hpp"

namespace fs = std::filesystem;
using namespace ranks;
using common::median;
using namespace collectives;

namespace {

constexpr int64_t kT = int64_t(1) << 61;  // the reader's contract: every time in [-kT, kT]
constexpr int64_t kMs = 1'000'000;

// ---------------------------------------------------------------- D2: markers without std::regex

TEST(ReproD2, DefaultMarkerMatchesExactlyWhatItsRegexMatches) {
  const std::regex re(kDefaultIterationMarker);
  std::vector<std::string> names = {"ProfilerStep#0", "ProfilerStep#", "ProfilerStep#12a", "profilerStep#1", "iteration 3",
                                    "Iteration_#:7", "iteration", "iteration x1", "Step 9", "step9", "step", "steps 1",
                                    "train_step", "train_step anything", "train_step\nx", "training_step_3", "trainstep",
                                    "xstep 1", " step 1", "step 1 ", "Step#:_ 12", "train_step\r", ""};
  // Random strings over the alphabet the pattern cares about.
  const std::string alpha = "ProfilerStep#0123456789 _:Iiteration\n\rtraining_sx";
  std::mt19937 rng(8);
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int pick = int(rng() % 5);
    const char* heads[] = {"ProfilerStep#", "iteration", "Step", "train_step", "training_step"};
    if (rng() % 2) s = heads[pick];
    for (size_t n = rng() % 6; n-- > 0;) s += alpha[rng() % alpha.size()];
    names.push_back(s);
  }
  for (const auto& s : names) ASSERT_EQ(default_iteration_marker(s), std::regex_search(s, re)) << "'" << s << "'";
}

RankTimeline with_long_markers(size_t tail, char fill) {
  TimelineBuilder b;
  for (int i = 0; i < 4; ++i) {
    const int64_t t = i * 100 * kMs;
    const std::string name = "train_step" + std::string(tail, fill) + std::to_string(i);
    b.marker(t, t + 90 * kMs, name.c_str());
    b.kernel(t + kMs, t + 50 * kMs, "gemm", false, 7, t + kMs / 2);
  }
  return b.tl;
}

TEST(ReproD2, HugeNvtxNamesMatchedInLinearTime) {
  for (size_t tail : {size_t(30'000), size_t(1) << 20}) {
    const auto tl = with_long_markers(tail, 'x');
    IterationSource src{};
    EXPECT_EQ(find_iterations(tl, IterationMarker{}, &src).size(), 4u) << tail;  // the default: any length
    EXPECT_EQ(src, IterationSource::NvtxMarker);
    // A user's regex sees the whole name (RE2: no recursion per character, no backtracking).
    EXPECT_EQ(find_iterations(tl, IterationMarker(common::Regex("^train_step")), &src).size(), 4u) << tail;
    EXPECT_EQ(find_iterations(tl, IterationMarker(common::Regex("^train_stepx*\\d$")), &src).size(), 4u) << tail;
    EXPECT_EQ(find_iterations(tl, IterationMarker(common::Regex("^train_step x*$")), &src).size(), 0u) << tail;
    EXPECT_EQ(find_iterations(tl, IterationMarker(common::Regex("(x|y)*z")), &src).size(), 0u) << tail;
    MetricsOptions opt;
    EXPECT_EQ(compute_metrics(tl, opt).iterations.size(), 4u);
  }
}

// N11: patterns with nested quantifiers, exponential for a backtracking engine on a long name,
// end at once (the test's own bound is a hang guard, far above the milliseconds they take).
TEST(ReproN11, NestedQuantifiersOnLongNamesEnd) {
  const auto tl = with_long_markers(100'000, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  for (const char* p : {"^(\\w+\\s?)+$", "(x+x+)+y", "^(a|aa)+$", "(.*a){20}"}) {
    IterationSource src{};
    const size_t n = find_iterations(tl, IterationMarker(common::Regex(p)), &src).size();
    EXPECT_EQ(n, std::string(p) == "^(\\w+\\s?)+$" ? 4u : 0u) << p;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// ---------------------------------------------------------------- D1: pending ops, bounds by construction

// Two iterations of 4 NCCL ops on streams 1-4 (launch 0.1 ms before start), capture 10 s long.
TimelineBuilder two_iterations() {
  TimelineBuilder b;
  for (int it = 0; it < 2; ++it) {
    const int64_t t = it * 100 * kMs;
    b.marker(t, t + 90 * kMs, ("ProfilerStep#" + std::to_string(it)).c_str());
    for (int s = 1; s <= 4; ++s) b.kernel(t + s * 10 * kMs, t + s * 10 * kMs + kMs, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, s, t + s * 10 * kMs - 100'000);
  }
  b.tl.capture_end = 10'000 * kMs;
  return b;
}

std::vector<PendingOp> pending(const RankTimeline& tl) {
  IterationSource src{};
  const auto its = find_iterations(tl, IterationMarker{}, &src);
  return pending_ops(tl, extract_ops(tl, its, 0), its);
}

TEST(ReproD1, MoreNcclLaunchesWithoutKernelThanOneIterationHolds) {
  auto b = two_iterations();
  const uint32_t api = b.tl.names.intern("ncclAllReduce");
  for (int i = 0; i < 10'000; ++i) b.tl.pending_nccl.push_back({300 * kMs + i * 1000, i % 3 ? api : kNoName});
  const auto out = pending(b.tl);
  ASSERT_FALSE(out.empty());
  EXPECT_LE(out.size(), 256u);  // bounded work
  for (const auto& p : out) EXPECT_TRUE(p.stream >= 1 && p.stream <= 4) << p.stream;
  // The first lands one iteration back: stream 1, after its 2 completed ops.
  EXPECT_EQ(out[0].stream, 1);
  EXPECT_EQ(out[0].seq, 2u);
}

TEST(ReproD1, PendingLaunchesOfUnknownTimeOrWithoutAnyOpAreSafe) {
  auto b = two_iterations();
  b.tl.pending_nccl.push_back({kNoTime, kNoName});
  b.tl.pending_nccl.push_back({-kT, kNoName});  // negative, before everything: no context
  EXPECT_NO_FATAL_FAILURE(pending(b.tl));
  RankTimeline empty;  // launches but no kernel at all
  empty.capture_end = kT;
  for (int i = 0; i < 1000; ++i) empty.pending_nccl.push_back({i, kNoName});
  EXPECT_TRUE(pending(empty).empty());
  // The same without NCCL NVTX ranges (the inferred path), ops given but no kernels in the timeline.
  RankTimeline no_kernels;
  no_kernels.capture_end = kT;
  for (int i = 0; i < 1000; ++i) no_kernels.unfinished_launches.push_back({i % 2 ? kNoTime : i, kNoName});
  std::vector<CollectiveOp> ops(3);
  for (auto& op : ops) op.stream = 1;
  EXPECT_TRUE(pending_ops(no_kernels, ops, {}).empty());  // max over no kernel ends: never dereferenced
}

TEST(ReproD1, UnfinishedLaunchesFarMoreThanAnIteration) {
  auto b = two_iterations();
  // Compute kernels between the ops, so that the launch sequence has context; then the GPU idles.
  for (int i = 0; i < 50'000; ++i) b.tl.unfinished_launches.push_back({300 * kMs + i * 100, kNoName});
  b.tl.unfinished_launches.push_back({kNoTime, kNoName});
  IterationSource src{};
  const auto its = find_iterations(b.tl, IterationMarker{}, &src);
  const auto out = pending_ops(b.tl, extract_ops(b.tl, its, 0), its);
  EXPECT_LE(out.size(), 4u);  // at most one per stream
}

// Kernels whose launch record was lost (NULL, renumbered, negative or duplicated correlationIds):
// their launch calls look pending, but a completed kernel after each explains it (repro corr_null).
TEST(ReproD1, LaunchesOfKernelsWithLostCorrelationAreNotStuck) {
  TimelineBuilder b;
  const uint32_t api = b.tl.names.intern("ncclAllReduce");
  for (int it = 0; it < 3; ++it) {
    const int64_t t = it * 100 * kMs;
    b.marker(t, t + 90 * kMs, ("ProfilerStep#" + std::to_string(it)).c_str());
    for (int s = 1; s <= 2; ++s) {
      const int64_t k = t + s * 10 * kMs;
      b.kernel(k, k + kMs, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, s);  // launch unknown
      b.tl.pending_nccl.push_back({k - 100'000, api});
    }
  }
  b.tl.capture_end = 10'000 * kMs;
  EXPECT_TRUE(pending(b.tl).empty());
  // One launch more than the unlinked kernels explain: a real stuck collective is still seen.
  b.tl.pending_nccl.push_back({400 * kMs, api});
  EXPECT_EQ(pending(b.tl).size(), 1u);
}

// A CUDA graph launch: one launch call (one correlationId) for a whole iteration, NCCL kernels
// included, so many ops share one launch time.
TEST(ReproD1, GraphLaunchesShareOneLaunchTime) {
  TimelineBuilder b;
  for (int it = 0; it < 4; ++it) {
    const int64_t t = it * 100 * kMs;
    b.marker(t, t + 90 * kMs, ("ProfilerStep#" + std::to_string(it)).c_str());
    for (int s = 1; s <= 3; ++s) {
      b.kernel(t + s * 10 * kMs, t + s * 10 * kMs + 3 * kMs, "gemm", false, 7, t + 1000);
      b.kernel(t + s * 10 * kMs + 4 * kMs, t + s * 10 * kMs + 5 * kMs, "ncclDevKernel_SendRecv", true, s, t + 1000);
    }
  }
  b.tl.capture_end = 10'000 * kMs;
  b.tl.pending_nccl.push_back({400 * kMs + 1000, kNoName});
  IterationSource src{};
  const auto its = find_iterations(b.tl, IterationMarker{}, &src);
  ASSERT_EQ(its.size(), 4u);
  const auto ops = extract_ops(b.tl, its, 0);
  ASSERT_EQ(ops.size(), 12u);
  EXPECT_EQ(ops.back().iteration, 3);
  const auto out = pending_ops(b.tl, ops, its);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stream, 1);  // one iteration back: the first op of the graph
  EXPECT_EQ(out[0].seq, 4u);
}

// ---------------------------------------------------------------- D10: extreme in-contract timelines

// Times at the contract's edges, durations near 2^62, and many kernels: every sum would overflow.
RankTimeline extreme_timeline(size_t kernels) {
  TimelineBuilder b;
  b.tl.utc_epoch_ns = kT;
  b.tl.capture_start = -kT, b.tl.capture_end = kT;
  b.marker(-kT, -kT + 10, "ProfilerStep#1");
  b.marker(-kT / 2, 0, "ProfilerStep#2");
  b.marker(0, 10, "ProfilerStep#3");
  b.marker(kT - 10, kT, "ProfilerStep#4");
  for (size_t i = 0; i < kernels; ++i) b.kernel(-kT, kT, i % 3 ? "gemm" : "ncclDevKernel_AllReduce_Sum_f32_RING_LL", i % 3 == 0, int(i % 3), -kT);
  for (int i = 0; i < 1000; ++i) b.copy(-kT / 2, kT, INT64_MAX / 3, CopyKind::HtoD), b.sync(-kT / 2, kT);  // in scope
  b.kernel(kT, kT, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, 0, kT);
  b.tl.pending_nccl.push_back({-kT, kNoName});
  b.tl.pending_nccl.push_back({kT, kNoName});
  b.tl.unfinished_launches.push_back({-kT, kNoName});
  return b.tl;
}

TEST(ReproD10, MetricsAndIterationsOfAnExtremeTimeline) {
  const auto tl = extreme_timeline(1 << 20);
  const auto m = compute_metrics(tl);
  ASSERT_EQ(m.iterations.size(), 4u);
  EXPECT_EQ(m.whole.span_ns, 2 * kT);
  EXPECT_GE(m.whole.busy_ns, 0);
  EXPECT_GE(m.whole.idle_ns, 0);
  for (const auto& k : m.top_kernels) EXPECT_EQ(k.total_ns, kSatMax) << tl.names.str(k.name);  // saturated, not wrapped
  EXPECT_EQ(m.h2d_bytes, kSatMax);
  EXPECT_EQ(m.sync_ns, kSatMax);
  const auto w = iteration_work(tl, m.iterations);
  for (double x : w.idle_ns) EXPECT_GE(x, 0);
  TimelineBuilder none = {};  // no markers: the collective period on extreme gaps
  none.tl.utc_epoch_ns = -kT;
  for (int i = 0; i < 64; ++i) none.kernel(-kT + i * (kT / 32), -kT + i * (kT / 32) + 1, "ncclDevKernel_SendRecv", true, i % 2);
  IterationSource src{};
  EXPECT_NO_FATAL_FAILURE(find_iterations(none.tl, IterationMarker{}, &src));
  std::vector<uint64_t> keys(30, 1);
  std::vector<int64_t> starts(30);
  for (size_t i = 0; i < starts.size(); ++i) starts[i] = i % 2 ? INT64_MAX : INT64_MIN;  // any starts, not a timeline's
  EXPECT_NO_FATAL_FAILURE(choose_collective_period(keys, starts));
  EXPECT_EQ(median(std::vector<int64_t>{INT64_MAX, INT64_MAX - 2}), INT64_MAX - 1);
  EXPECT_EQ(median(std::vector<int64_t>{-3, 0}), -1);  // the rounding of (a + b) / 2, unchanged
  LogHistogram h;
  h.add(INT64_MIN), h.add(INT64_MAX);
  EXPECT_EQ(h.total(), 2u);
  EXPECT_NO_FATAL_FAILURE(change_points({1e300, -1e300, 1e300, -1e300, 1e308, 0, 0, 0, 0, 0, 0, 0}));
}

MemberOps member(int rank, const RankTimeline& tl) {
  IterationSource src{};
  const auto its = find_iterations(tl, IterationMarker{}, &src);
  MemberOps m;
  m.rank = rank;
  for (const auto& op : extract_ops(tl, its, rank))
    if (op.stream == 0) m.ops.push_back(op);
  m.capture_end = sat_add(tl.utc_epoch_ns, tl.capture_end);
  const auto p = pending_ops(tl, extract_ops(tl, its, rank), its);
  m.pending_next = !p.empty();
  m.pending_launch = p.empty() ? 0 : p[0].launch;
  return m;
}

TEST(ReproD10, OpsClockAndReplayOfRanksAtOppositeEnds) {
  // Rank 0 at utc +2^61, rank 1 at -2^61: wall clocks 2^63 apart, NCCL ends spread over 2^62.
  auto a = extreme_timeline(1 << 12), b = a;
  b.utc_epoch_ns = -kT;
  for (auto* v : {&b.kernels.start, &b.kernels.end, &b.kernels.launch}) std::fill(v->begin(), v->end(), -kT);
  std::vector<MemberOps> members = {member(0, a), member(1, b)};
  ASSERT_GT(members[0].ops.size(), 32u);
  members[1].ops.resize(members[1].ops.size() - 1);  // rank 1 lacks the last op: desync path
  members[1].pending_next = true, members[1].pending_launch = INT64_MIN + 1;
  auto edges = comm_clock_edges(members);
  ASSERT_EQ(edges.size(), 1u);
  const auto clocks = solve_clocks(2, edges, 0);
  for (int64_t t : {INT64_MIN, INT64_MAX, int64_t(0)}) EXPECT_NO_FATAL_FAILURE(clocks.correct(1, t));
  RankAccumulator acc(2);
  const auto r = replay_communicator(members, clocks, acc);
  for (const auto& op : r.ops) EXPECT_TRUE(op.skew >= 0 && op.transfer >= 0 && op.hold >= 0 && op.blame >= 0);
  // A wild clock solution (offset beyond int64, NaN drift) corrects without UB.
  ClockSolution wild;
  wild.offset_ns = {0, 1e30}, wild.drift = {NAN, 1e10}, wild.aligned = {1, 1};
  RankAccumulator acc2(2);
  EXPECT_NO_FATAL_FAILURE(replay_communicator(members, wild, acc2));
  const auto t = decompose({INT64_MIN, INT64_MAX, INT64_MIN}, {INT64_MAX, INT64_MIN, 0});
  EXPECT_EQ(t.skew, kSatMax);
  EXPECT_EQ(t.blame, kSatMax);
}

TEST(ReproD10, CommunicatorInferenceOnExtremeEnds) {
  std::vector<int64_t> x(64), y(64), z(64);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = i % 2 ? INT64_MAX : INT64_MIN;
    y[i] = i % 2 ? INT64_MIN : INT64_MAX;
    z[i] = (int64_t(i) - 32) * (kT / 16);
  }
  EXPECT_NO_FATAL_FAILURE(lockstep_score(x, y));
  EXPECT_NO_FATAL_FAILURE(coherent(x, z, 100'000));
  EXPECT_NO_FATAL_FAILURE(match_link_ops(x, y, INT64_MIN, INT64_MAX));
  EXPECT_NO_FATAL_FAILURE(match_link_ops(z, z, INT64_MAX, 60'000));
  std::vector<StreamSummary> streams;
  for (int r = 0; r < 6; ++r) {
    StreamSummary s;
    s.rank = r, s.stream = 1, s.ops = 64;
    s.first_type = r < 4 ? CollectiveType::AllReduce : CollectiveType::SendRecv;
    s.type_prefix_hash = uint64_t(s.first_type);
    s.first_ends = r % 2 ? x : z;
    if (r == 5) s.first_ends = y;
    streams.push_back(s);
  }
  EXPECT_NO_FATAL_FAILURE(infer_communicators(streams, std::nullopt, CommunicatorOptions{}));
  CommunicatorOptions wide;
  wide.max_clock_error_ns = INT64_MAX, wide.same_host_ns = INT64_MAX;
  EXPECT_NO_FATAL_FAILURE(infer_communicators(streams, std::nullopt, wide));
}

// ---------------------------------------------------------------- end to end: edited generated runs

// SS_SCAN_BIN in the environment runs another build (e.g. one without the fixes) on the same inputs.
const std::string kScan = std::getenv("SS_SCAN_BIN") ? std::getenv("SS_SCAN_BIN") : SS_SCAN_BIN;
const std::string kSim = SS_SIM_BIN, kShared = SS_SHARED_DIR;

using testsql::sql;

struct Scan {
  int status = -1;
  std::string report;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  size_t count(const char* key) const { return simdjson::dom::array(summary[key]).size(); }
};

// Analyses `dir` (outputs beside it); a crash, an internal error or no summary fails.
void scan(const fs::path& dir, Scan& s, const std::string& args = "") {
  const fs::path json = dir.string() + ".json", h5 = dir.string() + ".h5";
  s.report = testsh::sh(kScan + " " + dir.string() + " -o " + h5.string() + " --summary " + json.string() + " " + args, &s.status);
  ASSERT_EQ(s.status, 0) << s.report;
  ASSERT_EQ(s.report.find("internal error"), std::string::npos) << s.report;
  ASSERT_EQ(s.parser.load(json.string()).get(s.summary), simdjson::SUCCESS) << s.report;
}

fs::path generate(const std::string& name, const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("ss-repro-analysis-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  int st = 0;
  const auto out = testsh::sh(kSim + " " + dir.string() + " " + args, &st);
  EXPECT_EQ(st, 0) << out;
  return dir;
}

void expect_straggler(const Scan& s, int64_t rank, const char* cause) {
  ASSERT_EQ(s.count("stragglers"), 1u) << s.report;
  EXPECT_EQ(int64_t(s.summary["stragglers"].at(0)["rank"]), rank) << s.report;
  EXPECT_EQ(std::string_view(s.summary["stragglers"].at(0)["cause"]), cause) << s.report;
  EXPECT_EQ(s.count("desync"), 0u) << s.report;
}

TEST(ReproD1, CorrNullReproducer) {
  const fs::path src = fs::path(kShared) / "data/repro/corr_null";
  if (!fs::exists(src / "rank_0.sqlite")) GTEST_SKIP() << "no " << src << " (SS_SHARED_DIR holds the reproducers)";
  const fs::path dir = fs::temp_directory_path() / ("ss-repro-corr-null-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(src, dir);
  Scan s;
  scan(dir, s);
  EXPECT_NE(s.report.find("2 ranks from 2 files"), std::string::npos) << s.report;
  // Rank 0's kernels lost their launch records: their launch calls are not stuck collectives.
  EXPECT_EQ(s.count("desync"), 0u) << s.report;
  fs::remove_all(dir);
}

// Rank 0 of a generated run (slow GPU on rank 5) with its correlationIds broken in each way the
// fuzzer found: the run is analysed, the straggler still found, nobody is said to hang.
TEST(ReproD1, BrokenCorrelationIdsOnOneRank) {
  const fs::path base = generate("corr", "--layout 2x2x2 --hosts 2 --iterations 12 --seed 5 --fault slow_gpu:5:4:1.4");
  const char* launches = "(SELECT id FROM StringIds WHERE value LIKE 'cuLaunchKernelEx%' OR value LIKE 'cudaLaunchKernel%')";
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"null", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = NULL"},
      {"null_runtime", "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = NULL"},
      {"duplicated", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 7; UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 7"},
      {"renumbered", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = correlationId + 1000003"},
      {"negative", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = -correlationId; "
                   "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = -correlationId WHERE rowid % 2 = 0"},
      {"missing", std::string("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN ") + launches},
      {"split_pids", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + 0x1000000 WHERE rowid % 2 = 0"},
  };
  for (const auto& [name, q] : variants) {
    SCOPED_TRACE(name);
    const fs::path dir = base.string() + "-" + name;
    fs::remove_all(dir);
    fs::copy(base, dir);
    sql(dir / "rank_0.sqlite", q);
    Scan s;
    scan(dir, s, "--layout 2x2x2");
    if (name != "split_pids") expect_straggler(s, 5, "slow_gpu");  // two processes in one file: ranks change
    fs::remove_all(dir);
  }
  fs::remove_all(base);
}

// Far more NCCL launches without a kernel than one iteration holds (each NCCL launch call of rank
// 0 repeated 20 times with fresh correlationIds), old enough to count (the capture goes on 60 s).
TEST(ReproD1, ThousandsOfNcclLaunchesWithoutKernel) {
  const fs::path dir = generate("launches", "--layout 2x2x2 --hosts 2 --iterations 12 --seed 5");
  std::string q = "UPDATE ANALYSIS_DETAILS SET duration = duration + 60000000000, stopTime = stopTime + 60000000000;";
  for (int k = 1; k <= 20; ++k)
    q += "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) "
         "SELECT start, end, eventClass, globalTid, correlationId + " + std::to_string(k * 10'000'000) +
         ", nameId, returnValue FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId < 10000000 AND nameId IN "
         "(SELECT id FROM StringIds WHERE value LIKE 'cuLaunchKernelEx%');";
  sql(dir / "rank_0.sqlite", q);
  Scan s;
  scan(dir, s, "--layout 2x2x2");
  fs::remove_all(dir);
}

// CUDA graphs holding the NCCL kernels: from iteration 2 on, every rank launches each iteration as
// one graph (one cudaGraphLaunch row whose correlationId all its kernels share, compute and NCCL);
// the per-kernel launch calls and NCCL's NVTX ranges are gone (NCCL records them at capture, not
// at replay). The verdict must not change.
TEST(ReproD1, NcclKernelsInsideCudaGraphs) {
  const fs::path dir = generate("graphs", "--layout 2x2x2 --hosts 2 --iterations 12 --seed 5 --fault slow_gpu:5:4:1.4");
  for (int r = 0; r < 8; ++r) {
    std::string q =
        "INSERT INTO StringIds (id, value) SELECT (SELECT max(id) + 1 FROM StringIds), 'cudaGraphLaunch_v10000' "
        "WHERE NOT EXISTS (SELECT 1 FROM StringIds WHERE value = 'cudaGraphLaunch_v10000');"
        "CREATE TEMP TABLE step AS SELECT e.start AS s, coalesce((SELECT min(n.start) FROM NVTX_EVENTS n WHERE n.text LIKE "
        "'ProfilerStep#%' AND n.start > e.start), 9223372036854775807) AS stop, e.globalTid AS tid, 2000000000 + e.rowid AS corr "
        "FROM NVTX_EVENTS e WHERE e.text LIKE 'ProfilerStep#%' AND CAST(substr(e.text, 14) AS INTEGER) >= 2;"
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) "
        "SELECT s, s + 1000, (SELECT eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1), tid, corr, "
        "(SELECT id FROM StringIds WHERE value = 'cudaGraphLaunch_v10000'), 0 FROM step;"
        "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN (SELECT k.correlationId FROM "
        "CUPTI_ACTIVITY_KIND_KERNEL k JOIN step ON k.start >= step.s AND k.start < step.stop);"
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = (SELECT corr FROM step WHERE start >= step.s AND start < step.stop) "
        "WHERE EXISTS (SELECT 1 FROM step WHERE start >= step.s AND start < step.stop);"
        "DELETE FROM NVTX_EVENTS WHERE textId IN (SELECT id FROM StringIds WHERE value LIKE 'nccl%') AND "
        "EXISTS (SELECT 1 FROM step WHERE NVTX_EVENTS.start >= step.s AND NVTX_EVENTS.start < step.stop);";
    sql(dir / ("rank_" + std::to_string(r) + ".sqlite"), q);
  }
  Scan s;
  scan(dir, s, "--layout 2x2x2");
  expect_straggler(s, 5, "slow_gpu");
  EXPECT_EQ(s.count("capture_ended"), 0u) << s.report;
  fs::remove_all(dir);
}

// D2 end to end: one NVTX range of a 2-rank run named train_step + 30,000 x, or + 1 MB; one NCCL
// kernel name 1 MB long; with the default markers and with a user's --iteration-marker.
TEST(ReproD2, LongNamesEndToEnd) {
  const fs::path base = generate("names", "--layout 1x1x2 --hosts 1 --iterations 4 --seed 3");
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"nvtx30k", "UPDATE NVTX_EVENTS SET text = 'train_step' || replace(hex(zeroblob(15000)), '0', 'x') WHERE rowid = "
                  "(SELECT min(rowid) FROM NVTX_EVENTS WHERE text LIKE 'ProfilerStep#%')"},
      {"nvtx1M", "UPDATE NVTX_EVENTS SET text = 'train_step' || replace(hex(zeroblob(524288)), '0', 'x') WHERE text LIKE "
                 "'ProfilerStep#%'"},
      {"kernel1M", "UPDATE StringIds SET value = value || replace(hex(zeroblob(524288)), '0', 'x') WHERE id = (SELECT "
                   "min(shortName) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName WHERE s.value "
                   "LIKE 'nccl%')"},
  };
  for (const auto& [name, q] : variants)
    for (const std::string args : {"", "--iteration-marker 'train_step.*$'"}) {
      SCOPED_TRACE(name + " " + args);
      const fs::path dir = base.string() + "-" + name;
      fs::remove_all(dir);
      fs::copy(base, dir);
      sql(dir / "rank_0.sqlite", q);
      Scan s;
      scan(dir, s, args);
      fs::remove_all(dir);
    }
  fs::remove_all(base);
}

}  // namespace
