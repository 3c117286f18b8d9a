// Root causes across ranks (collectives/root_causes.hpp) on hand-made evidence: comm_imbalance on
// the rank that computes more and waits less, not on its peers; a finding of its own that explains
// the extra compute takes its place; the tie of a straggler to its distinguishing findings; the
// job's own findings.
#include <gtest/gtest.h>

#include "collectives/desync.hpp"
#include "collectives/root_causes.hpp"
#include "collectives/verdict.hpp"

using namespace collectives;
using ranks::Finding;
using ranks::RankFinding;

namespace {

// Four ranks of one role, 10 iterations of 100 ms; `heavy` computes 60 ms instead of 50 and waits
// 0 ms per step where the others wait 10.
std::vector<RankEvidence> role(int heavy) {
  std::vector<RankEvidence> v;
  for (int r = 0; r < 4; ++r) {
    RankEvidence e;
    e.rank = r;
    e.step_ms.assign(10, 100);
    e.compute_ms.assign(10, r == heavy ? 60 : 50);
    e.wait_by_iteration.assign(10, r == heavy ? 0 : 10e6);
    v.push_back(e);
  }
  return v;
}

std::vector<std::pair<int, Finding>> rows(const std::vector<RankEvidence>& v) {
  std::vector<std::pair<int, Finding>> out;
  for (const auto& e : v)
    for (const auto& f : e.findings) out.push_back({e.rank, f.finding});
  return out;
}

}  // namespace

TEST(RootCauses, ImbalanceOnTheRankThatComputesMoreAndWaitsLess) {
  auto v = role(2);
  add_imbalance_findings(v);
  ASSERT_EQ(rows(v), (std::vector<std::pair<int, Finding>>{{2, Finding::CommImbalance}}));
  EXPECT_NEAR(v[2].findings[0].cost_ms_per_step, 10, 1e-9);
  EXPECT_NEAR(v[2].findings[0].severity, 10 / (0.03 * 100), 1e-9);
  auto even = role(-1);  // all alike: nobody
  add_imbalance_findings(even);
  EXPECT_TRUE(rows(even).empty());
  auto waits = role(2);  // computes more but waits as much: not the one they wait for
  waits[2].wait_by_iteration.assign(10, 10e6);
  add_imbalance_findings(waits);
  EXPECT_TRUE(rows(waits).empty());
}

TEST(RootCauses, AnOwnFindingThatCostsTheExtraComputeIsTheCause) {
  auto v = role(2);
  v[2].findings.push_back({2, Finding::SmallKernels, 6, 9.0, "600 kernels under 10 us"});
  add_imbalance_findings(v);
  ASSERT_EQ(rows(v), (std::vector<std::pair<int, Finding>>{{2, Finding::SmallKernels}}));
  EXPECT_NE(v[2].findings[0].evidence.find("600 kernels under 10 us; so its peers wait: compute 60.00 ms"), std::string::npos)
      << v[2].findings[0].evidence;
  // Too cheap to explain 10 ms (under half), or shared by the peers: the imbalance stands.
  auto cheap = role(2);
  cheap[2].findings.push_back({2, Finding::SmallKernels, 6, 4.0, "tiny"});
  add_imbalance_findings(cheap);
  EXPECT_EQ(rows(cheap), (std::vector<std::pair<int, Finding>>{{2, Finding::SmallKernels}, {2, Finding::CommImbalance}}));
  auto shared = role(2);
  for (auto& e : shared) e.findings.push_back({e.rank, Finding::SmallKernels, 6, 9.0, "tiny"});
  add_imbalance_findings(shared);
  EXPECT_EQ(rows(shared).size(), 5u);
  ASSERT_EQ(shared[2].findings.size(), 2u);
  EXPECT_EQ(shared[2].findings[1].finding, Finding::CommImbalance);
}

TEST(RootCauses, HostDelayStragglerIsRefinedByItsCostliestHostSideFinding) {
  auto v = role(-1);
  v[1].findings.push_back({1, Finding::KernelHotspot, 1.2, 30, "flash"});  // all have it: not distinguishing
  v[1].findings.push_back({1, Finding::GcPause, 2, 8, "5 periodic host stalls"});
  v[1].findings.push_back({1, Finding::GpuBubbles, 1.5, 3, "gaps"});
  for (int r : {0, 2, 3}) v[r].findings.push_back({r, Finding::KernelHotspot, 1.2, 30, "flash"});
  v[3].findings.push_back({3, Finding::GpuBubbles, 1.5, 3, "gaps"});  // peers' median 0: still apart
  Verdict verdict;
  Straggler s;
  s.rank = 1, s.cause = Cause::HostDelay, s.evidence = "late";
  verdict.stragglers.push_back(s);
  tie_findings(verdict, v);
  const Straggler& t = verdict.stragglers[0];
  EXPECT_EQ(t.findings, (std::vector<Finding>{Finding::GcPause, Finding::GpuBubbles}));
  EXPECT_EQ(t.cause_detail, Finding::GcPause);
  EXPECT_EQ(t.evidence, "late; set apart by gc_pause: 5 periodic host stalls (also: gpu_bubbles)");
}

TEST(RootCauses, FindingsOfMostRanksAreTheJobsOwn) {
  std::vector<RankFinding> all;
  for (int r = 0; r < 4; ++r) all.push_back({r, Finding::KernelHotspot, 1.2, 10.0 + r, "hot " + std::to_string(r)});
  all.push_back({2, Finding::GcPause, 2, 50, "gc"});
  const auto s = summarize_findings(all, 4);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].finding, Finding::GcPause);  // costliest first
  EXPECT_FALSE(s[0].shared);
  EXPECT_EQ(s[1].finding, Finding::KernelHotspot);
  EXPECT_TRUE(s[1].shared);
  EXPECT_EQ(s[1].ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_NEAR(s[1].cost_ms_per_step, 13, 1e-9);
  EXPECT_NEAR(s[1].median_cost_ms_per_step, 11.5, 1e-9);
  EXPECT_EQ(s[1].evidence, "hot 3");
}

// Issue 37: a crashed rank in a per-host file has no capture end of its own. It is missing from
// an op its peers wait in, and itself only stuck in a launch that never finished, in no op anyone
// is missing from: when every rank was read, it is the root (crashed, stopped in a launch); when a
// rank's profile is missing, the one it may wait for is unseen, and nobody is named; an op no one
// waits in names nobody either.
TEST(Desync, AStuckMissingRankIsTheRootOnlyWhenEveryRankWasRead) {
  DesyncRow d;
  d.communicator = "dp-1", d.missing_ranks = {5}, d.blocked_ranks = {1, 3, 7};
  std::vector<DesyncRow> rows{d};
  mark_root_causes(rows, {}, {5});
  EXPECT_FALSE(rows[0].root_cause);  // not known to be complete: blocked elsewhere, as before
  rows = {d};
  mark_root_causes(rows, {}, {5}, true);
  EXPECT_TRUE(rows[0].root_cause);
  EXPECT_EQ(rows[0].crashed_ranks, (std::vector<int32_t>{5}));
  EXPECT_EQ(rows[0].stopped_in_launch, (std::vector<int32_t>{5}));
  // Rank 5 waits in another row's op for rank 9, which stopped by itself: 9 is the root.
  DesyncRow e;
  e.communicator = "tp-2", e.missing_ranks = {9}, e.blocked_ranks = {5};
  rows = {d, e};
  mark_root_causes(rows, {}, {5}, true);
  EXPECT_FALSE(rows[0].root_cause);
  EXPECT_TRUE(rows[1].root_cause);
  EXPECT_TRUE(rows[0].stopped_in_launch.empty());
  // Nobody waits: a capture that ended, not a stop.
  d.blocked_ranks.clear();
  rows = {d};
  mark_root_causes(rows, {}, {5}, true);
  EXPECT_FALSE(rows[0].root_cause);
}

// Four like all-reduces over 8 iterations (dp-c on node-c and node-c+4), transfer(c, i) ns in
// iteration i, a capture-wide median of `median_ns` each.
template <class F>
std::vector<CommEvidence> four_likes(F transfer, double median_ns) {
  std::vector<CommEvidence> comms;
  for (int c = 0; c < 4; ++c) {
    CommEvidence e;
    e.name = "dp-" + std::to_string(c), e.type = CollectiveType::AllReduce, e.family = 7;
    e.ranks = {2 * c, 2 * c + 1}, e.hosts = {"node-" + std::to_string(c), "node-" + std::to_string(c + 4)};
    for (int i = 0; i < 8; ++i) e.transfer_by_iteration.push_back(transfer(c, i));
    e.median_transfer_ns = median_ns;
    comms.push_back(e);
  }
  return comms;
}

// Issue 37: a link that turns slow in the last quarter leaves its capture-wide median alone; per
// iteration it stands out against its like from there, and is named with that onset.
TEST(SlowLinks, ALinkThatTurnsSlowLateIsNamedWithItsOnset) {
  auto comms = four_likes([](int c, int i) { return (c == 0 && i >= 6 ? 4.5e6 : 1.0e6) * (1 + 0.01 * ((i + c) % 3)); }, 1.0e6);
  std::vector<RankEvidence> ranks;
  Verdict v = decide(ranks, comms, SIZE_MAX);
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.slow_links[0].communicators, (std::vector<std::string>{"dp-0"}));
  EXPECT_EQ(v.slow_links[0].onset_iteration, 6);
  EXPECT_NEAR(v.slow_links[0].slowdown, 4.5, 0.2);
  // The same communicator slow only in the last iteration: one iteration is no onset.
  for (auto& x : comms[0].transfer_by_iteration) x = 1.0e6;
  comms[0].transfer_by_iteration[7] = 4.5e6;
  EXPECT_TRUE(decide(ranks, comms, SIZE_MAX).slow_links.empty());
}

// A link slow over most of the capture is found by its capture-wide median, and still dated where
// it turned slow; one slow from the first steady iteration has no onset.
TEST(SlowLinks, ALinkSlowOverMostOfTheCaptureIsDatedWhereItTurnedSlow) {
  auto comms = four_likes([](int c, int i) { return c == 0 && i >= 3 ? 3.0e6 : 1.0e6; }, 1.0e6);
  comms[0].median_transfer_ns = 3.0e6;
  Verdict v = decide({}, comms, SIZE_MAX);
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.slow_links[0].onset_iteration, 3);
  for (auto& x : comms[0].transfer_by_iteration) x = 3.0e6;
  v = decide({}, comms, SIZE_MAX);
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.slow_links[0].onset_iteration, -1);
}
