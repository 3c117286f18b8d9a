// Clock alignment: planted per-rank offsets (and drift) are recovered from noisy end times.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "collectives/clock.hpp"
#include "collectives/host_clocks.hpp"

using namespace collectives;

TEST(Clock, RecoversOffsetsOverACommunicatorGraph) {
  // 8 ranks on 4 hosts; "TP" pairs within a host, "DP" groups across hosts.
  const double host_offset[] = {0, 7.3e6, -9.1e6, 4.4e6};
  std::mt19937 rng(3);
  std::normal_distribution<double> jitter(0, 2000);  // 2 us end noise
  auto clock = [&](int r) { return host_offset[r / 2]; };
  std::vector<ClockEdge> edges;
  auto observe = [&](int a, int b) {
    std::vector<int64_t> ea, eb;
    for (int k = 0; k < 200; ++k) {
      const double t = 1e18 + k * 5e6;
      ea.push_back(int64_t(t + clock(a) + jitter(rng)));
      eb.push_back(int64_t(t + clock(b) + jitter(rng)));
    }
    edges.push_back(fit_pair(a, b, ea, eb));
  };
  for (int h = 0; h < 4; ++h) observe(2 * h + 1, 2 * h);  // TP
  for (int r = 2; r < 8; r += 2) observe(r, 0);           // DP group 0
  for (int r = 3; r < 8; r += 2) observe(r, 1);           // DP group 1
  auto s = solve_clocks(8, edges, 0);
  for (int r = 0; r < 8; ++r) {
    EXPECT_TRUE(s.aligned[size_t(r)]);
    EXPECT_NEAR(s.offset_ns[size_t(r)], clock(r), 2000) << "rank " << r;
  }
  EXPECT_EQ(s.correct(2, int64_t(1e18) + 7'000'000), int64_t(1e18) + 7'000'000 - int64_t(s.offset_ns[2] + 0.5));
}

TEST(Clock, DriftAndOutliers) {
  std::mt19937 rng(5);
  std::normal_distribution<double> jitter(0, 1000);
  std::vector<int64_t> ea, eb;
  const double drift = 20e-6;  // 20 ppm
  for (int k = 0; k < 2000; ++k) {
    const double t = 1e18 + k * 2e6;  // 4 s capture
    double a = t + 3e6 + drift * (t - 1e18);
    if (k % 97 == 0) a += 5e6;  // a few ops where one end is late (p2p, tree algorithms)
    ea.push_back(int64_t(a + jitter(rng)));
    eb.push_back(int64_t(t + jitter(rng)));
  }
  auto e = fit_pair(1, 0, ea, eb);
  EXPECT_NEAR(e.drift, drift, 1e-6);
  const double expect_at_ref = 3e6 + drift * (e.t_ref_ns - 1e18);
  EXPECT_NEAR(e.offset_ns, expect_at_ref, 2000);
  auto s = solve_clocks(2, {e}, 0);
  EXPECT_NEAR(s.drift[1], drift, 1e-6);
}

TEST(Clock, DisconnectedRanksAreMarked) {
  auto s = solve_clocks(3, {fit_pair(1, 0, {10, 20}, {5, 15})}, 0);
  EXPECT_TRUE(s.aligned[1]);
  EXPECT_FALSE(s.aligned[2]);
  EXPECT_NEAR(s.offset_ns[1], 5, 1e-9);
}

TEST(Clock, SameFileTiesDoNotMoveTheReferenceTime) {
  // Ranks 0 and 1 share a file (one clock: a tie edge); rank 2 is 1.5 ms off with a tiny drift.
  // The offsets must be reported near the capture, not extrapolated to the Unix epoch.
  std::vector<int64_t> e0, e2;
  for (int k = 0; k < 200; ++k) {
    const double t = 1.78e18 + k * 5e6;
    e0.push_back(int64_t(t));
    e2.push_back(int64_t(t + 1.5e6 + 1e-7 * (t - 1.78e18)));
  }
  std::vector<ClockEdge> edges = {fit_pair(2, 0, e2, e0)};
  ClockEdge tie;
  tie.a = 1, tie.b = 0, tie.ops = kTieOps, tie.t_ref_ns = 0;  // a tie with no time of its own
  edges.push_back(tie);
  const auto s = solve_clocks(3, edges, 0);
  EXPECT_NEAR(s.offset_ns[2], 1.5e6, 1e3);
  EXPECT_NEAR(s.offset_ns[1], 0, 1);
}

TEST(Clock, WrongPairingsAndImplausibleOffsetsAreLeftOut) {
  auto edge = [](double offset, double spread, int64_t ops) {
    ClockEdge e;
    e.a = 1, e.b = 0, e.offset_ns = offset, e.spread_ns = spread, e.ops = ops;
    return e;
  };
  size_t left_out = 0;
  const auto kept = trusted_edges({edge(2e6, 3e3, 40),          // 2 ms, tight: a measurement
                                   edge(1e6, 400e3, 500),       // 0.4 ms spread: a wrong pairing
                                   edge(62'087e6, 5e3, 500),    // 62 s, tight and long: believed
                                   edge(62'087e6, 5e3, 20),     // 62 s on 20 ops: not
                                   edge(-11.6e6, 50e3, 30),     // 11.6 ms, plausible
                                   edge(1e9, 0, kTieOps)},      // a same-file tie: always kept
                                  &left_out);
  EXPECT_EQ(left_out, 2u);
  ASSERT_EQ(kept.size(), 4u);
  EXPECT_DOUBLE_EQ(kept[0].offset_ns, 2e6);
  EXPECT_DOUBLE_EQ(kept[1].offset_ns, 62'087e6);
  EXPECT_DOUBLE_EQ(kept[2].offset_ns, -11.6e6);
  EXPECT_EQ(kept[3].ops, kTieOps);
}

// A rank in no communicator belongs to the job when its op ends meet the others' at one clock
// difference all through (members of one collective end within microseconds), not when only its
// first ends do: another run of the same model started at the same instant drifts apart.
TEST(Clock, EndsMeetOnlyWhenEveryEndMeetsAtOneDifference) {
  std::mt19937 rng(5);
  std::normal_distribution<double> jitter(0, 1500);
  std::uniform_real_distribution<double> gap(3e5, 1.5e6);
  std::vector<double> t{1e18};  // the job's op ends: 64 ops 0.3-1.5 ms apart
  for (int k = 1; k < 64; ++k) t.push_back(t.back() + gap(rng));
  std::vector<int64_t> peers, sample;  // 4 peers
  for (int p = 0; p < 4; ++p)
    for (int k = 0; k < 64; ++k) {
      const auto e = int64_t(t[size_t(k)] + jitter(rng));
      peers.push_back(e);
      if (k < 8) sample.push_back(e);
    }
  std::sort(peers.begin(), peers.end());
  const int64_t offset = 37'000'123;  // its host's clock, 37 ms off
  std::vector<int64_t> same, other;
  for (int k = 0; k < 64; ++k) {
    same.push_back(int64_t(t[size_t(k)] + jitter(rng)) + offset);
    // the other job's ops take 0.3% longer: its ends leave the others' after a few ops
    other.push_back(int64_t(t[0] + (t[size_t(k)] - t[0]) * 1.003 + jitter(rng)) + offset);
  }
  EXPECT_TRUE(ends_meet(same, sample, peers));
  EXPECT_FALSE(ends_meet(other, sample, peers));
  std::vector<int64_t> shifted = same;  // the pile's window is coarse; the difference is refined
  for (auto& e : shifted) e += 30'000;
  EXPECT_TRUE(ends_meet(shifted, sample, peers));
  EXPECT_FALSE(ends_meet({}, sample, peers));
}
