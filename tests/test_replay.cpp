// Replay of one communicator on hand-made records: decomposition numbers, members that disagree,
// desync against capture windows.
#include <gtest/gtest.h>

#include "collectives/replay.hpp"

using namespace collectives;

namespace {
MemberOps member(int rank, std::vector<std::pair<int64_t, int64_t>> ops, int64_t capture_end = 1'000'000'000,
                 CollectiveType type = CollectiveType::AllReduce) {
  MemberOps m;
  m.rank = rank;
  m.capture_end = capture_end;
  uint32_t seq = 0;
  for (auto [s, e] : ops) {
    CollectiveOp op;
    op.start = s, op.end = e, op.rank = rank, op.seq = seq++, op.type = type, op.iteration = int32_t(seq) - 1;
    m.ops.push_back(op);
  }
  return m;
}
ClockSolution identity(int n) {
  ClockSolution c;
  c.offset_ns.assign(size_t(n), 0), c.drift.assign(size_t(n), 0), c.aligned.assign(size_t(n), 1);
  return c;
}
}  // namespace

TEST(Replay, DecomposesOneOperation) {
  std::vector<MemberOps> m = {member(0, {{0, 400}}), member(1, {{100, 401}}), member(2, {{300, 402}})};
  RankAccumulator acc(3);
  auto r = replay_communicator(m, identity(3), acc);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].last_rank, 2);
  EXPECT_EQ(r.ops[0].skew, 300);
  EXPECT_EQ(r.ops[0].transfer, 102);
  EXPECT_EQ(r.ops[0].hold, 200);
  EXPECT_EQ(r.ops[0].blame, 500);
  EXPECT_DOUBLE_EQ(acc.wait_ns[0], 300);
  EXPECT_DOUBLE_EQ(acc.wait_ns[1], 200);
  EXPECT_DOUBLE_EQ(acc.wait_ns[2], 0);
  EXPECT_DOUBLE_EQ(acc.late[2], 1);
  EXPECT_DOUBLE_EQ(acc.blame_ns[2], 500);
  EXPECT_EQ(r.arrival[0], (std::vector<int64_t>{0, 100, 300}));
  EXPECT_TRUE(r.desync.empty());
  EXPECT_EQ(r.mismatch_seq, -1);
  EXPECT_EQ(acc.wait_hist.total(), 3u);
  EXPECT_DOUBLE_EQ(bus_bandwidth_gbps(CollectiveType::AllReduce, 4, 1'000'000, 1'000), 1000.0 * 1.5);
}

TEST(Replay, MembersThatDisagreeAreReported) {
  auto a = member(0, {{0, 10}, {20, 30}, {40, 50}});
  auto b = member(1, {{0, 10}, {20, 30}, {40, 50}});
  b.ops[2].type = CollectiveType::AllGather;
  RankAccumulator acc(2);
  auto r = replay_communicator({a, b}, identity(2), acc);
  EXPECT_EQ(r.mismatch_seq, 2);
  EXPECT_NE(r.mismatch.find("AllGather"), std::string::npos) << r.mismatch;
}

TEST(Replay, DesyncOnlyWhenTheMissingMemberWasStillRecorded) {
  // Ranks 0 and 1 completed 5 ops, rank 2 only 3 and its capture went on: it never reached op 3.
  auto full = [](int r) { return member(r, {{0, 10}, {100, 110}, {200, 210}, {300, 310}, {400, 410}}); };
  auto hung = member(2, {{0, 10}, {100, 110}, {200, 210}}, 1'000'000'000);
  RankAccumulator acc(3);
  auto r = replay_communicator({full(0), full(1), hung}, identity(3), acc);
  ASSERT_EQ(r.desync.size(), 1u);
  EXPECT_EQ(r.desync[0].seq, 3u);
  EXPECT_EQ(r.desync[0].missing_ranks, std::vector<int32_t>{2});
  // Same counts, but rank 2's capture ended at 250 ns, before the others reached op 3 (t=300).
  auto cut = member(2, {{0, 10}, {100, 110}, {200, 210}}, 250);
  auto r2 = replay_communicator({full(0), full(1), cut}, identity(3), acc);
  EXPECT_TRUE(r2.desync.empty());
  // Blocked: rank 0 launched op 3 and waits in it, rank 1 never got there.
  auto a = member(0, {{0, 10}, {100, 110}, {200, 210}});
  a.pending_next = true;
  auto b = member(1, {{0, 10}, {100, 110}, {200, 210}});
  auto r3 = replay_communicator({a, b}, identity(2), acc);
  ASSERT_EQ(r3.desync.size(), 1u);
  EXPECT_EQ(r3.desync[0].seq, 3u);
  EXPECT_EQ(r3.desync[0].missing_ranks, std::vector<int32_t>{1});
  EXPECT_EQ(r3.desync[0].blocked_ranks, std::vector<int32_t>{0});
}
