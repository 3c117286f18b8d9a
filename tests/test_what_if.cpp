// The what-if replay (collectives/what_if.hpp) on records built by hand: replayed unchanged it
// gives back the measured makespan; each change moves it by what the dependency model says.
#include <gtest/gtest.h>

#include "collectives/what_if.hpp"

namespace {

using collectives::BlameRecords;
using collectives::WhatIfChange;
using collectives::WhatIfInputs;
using collectives::WhatIfReplay;

constexpr int64_t kMs = 1'000'000;

// Three ranks in one all-reduce, `n` ops in a row. Before each op every rank computes `gap[r]`
// (rank 2 the slowest); the op ends `transfer` after the last arrival.
BlameRecords lock_step(int n, const std::vector<int64_t>& gap, int64_t transfer) {
  BlameRecords rec;
  int64_t end = 0;
  for (int k = 0; k < n; ++k) {
    int64_t last = 0;
    for (int64_t g : gap) last = std::max(last, end + g);
    const uint32_t id = uint32_t(rec.ops.size());
    rec.ops.push_back({2, last, 0, 0, 0, uint32_t(k), transfer, 1});
    for (int r = 0; r < int(gap.size()); ++r)
      rec.members.push_back({r, id, end + gap[size_t(r)], last - (end + gap[size_t(r)]), end + gap[size_t(r)] - kMs});
    end = last + transfer;
  }
  return rec;
}

WhatIfInputs inputs(const BlameRecords& rec, int ranks) {
  WhatIfInputs in;
  in.records = &rec;
  in.comm_family = {7}, in.comm_p2p = {0}, in.comm_data_parallel = {0}, in.comm_shared = {0};
  in.role.assign(size_t(ranks), 0);
  return in;
}

TEST(WhatIf, UnchangedReplayIsTheMeasuredRun) {
  const auto rec = lock_step(10, {1 * kMs, 1 * kMs, 2 * kMs}, kMs / 2);
  const WhatIfReplay replay(inputs(rec, 3));
  EXPECT_EQ(replay.ops(), 10u);
  EXPECT_DOUBLE_EQ(replay.replay_unchanged_ns(), replay.makespan_ns());
}

TEST(WhatIf, AStragglerAtItsPeersMedianTakesTheirPace) {
  // Measured: 9 steps of 2 + 0.5 ms after the first op's arrival (fixed). Rank 2 at its peers'
  // 1 ms: 9 x 1.5 ms. The first op stays where it was.
  const auto rec = lock_step(10, {1 * kMs, 1 * kMs, 2 * kMs}, kMs / 2);
  const WhatIfReplay replay(inputs(rec, 3));
  WhatIfChange fix;
  fix.ranks = {2};
  const double first_arrival = 1 * kMs, measured_end = rec.ops.back().last_arrival + kMs / 2;
  EXPECT_DOUBLE_EQ(replay.makespan_ns(), measured_end - first_arrival);
  EXPECT_NEAR(replay.replay(fix), (2 * kMs + kMs / 2) + 9 * 1.5 * kMs - first_arrival, 1.0);
  // Fixing a rank that is not late changes nothing: the others still wait for rank 2.
  WhatIfChange other;
  other.ranks = {0};
  EXPECT_DOUBLE_EQ(replay.replay(other), replay.makespan_ns());
}

TEST(WhatIf, HiddenCommunicationRemovesTransfersOnly) {
  const auto rec = lock_step(10, {1 * kMs, 1 * kMs, 2 * kMs}, kMs / 2);
  const WhatIfReplay replay(inputs(rec, 3));
  WhatIfChange hide;
  hide.hide_communication = true;
  // Every op ends at its last arrival: 2 ms apart (rank 2 still sets the pace).
  EXPECT_NEAR(replay.replay(hide), 2 * kMs + 9 * 2 * kMs - 1 * kMs, 1.0);
}

TEST(WhatIf, OpsOutsideTheWindowAreLeftOut) {
  auto rec = lock_step(10, {1 * kMs, 1 * kMs, 2 * kMs}, kMs / 2);
  for (size_t k = 0; k < rec.ops.size(); ++k) rec.ops[k].iteration = int32_t(k / 5);  // iterations 0 and 1
  auto in = inputs(rec, 3);
  in.first_iteration = 1, in.end_iteration = 2;
  const WhatIfReplay replay(in);
  EXPECT_EQ(replay.ops(), 5u);
}

// A grouped kernel of rank 1 (stage 1) holds its exchange with rank 0 and its exchange with rank
// 2, each kept on its link (keep_link_ops): one kernel, an entry on each of two links sharing one
// stream. The exchange with rank 0 ends 0.5 ms after the kernel starts; the one with slow rank 2
// 5.5 ms after. The kernel's two entries arrive together: the link to rank 0 must not wait for
// the end of the exchange with rank 2 (the same kernel), or the unchanged replay is not the run.
TEST(WhatIf, AGroupedKernelOnTwoLinksArrivesOnceOnBoth) {
  BlameRecords rec;
  constexpr int64_t P = 10 * kMs, half = kMs / 2;
  for (int k = 0; k < 5; ++k) {
    const int64_t t = k * P, s1 = t + kMs, s2 = t + 6 * kMs;
    const auto id = uint32_t(rec.ops.size());
    // The link to rank 2 first among the records: its op is the first of the tie on rank 1.
    rec.ops.push_back({2, s2, 0, 0, 1, uint32_t(k), half, k});
    rec.members.push_back({1, id, s1, s2 - s1, s1 - kMs / 10});
    rec.members.push_back({2, id, s2, 0, s2 - kMs / 10});
    rec.ops.push_back({1, s1, 0, 0, 0, uint32_t(k), half, k});
    rec.members.push_back({0, id + 1, t, s1 - t, t - kMs / 10});
    rec.members.push_back({1, id + 1, s1, 0, s1 - kMs / 10});
  }
  WhatIfInputs in;
  in.records = &rec;
  in.comm_family = {7, 7}, in.comm_p2p = {1, 1}, in.comm_data_parallel = {0, 0}, in.comm_shared = {1, 1};
  in.role = {0, 1, 2};
  const WhatIfReplay replay(in);
  EXPECT_EQ(replay.ops(), 10u);
  EXPECT_DOUBLE_EQ(replay.replay_unchanged_ns(), replay.makespan_ns());
}

TEST(WhatIf, NoRecordsNoReplay) {
  const WhatIfReplay replay(WhatIfInputs{});
  EXPECT_EQ(replay.ops(), 0u);
  EXPECT_EQ(replay.makespan_ns(), 0.0);
  EXPECT_EQ(replay.replay_unchanged_ns(), 0.0);
}

}  // namespace
