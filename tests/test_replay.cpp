// Replay of one communicator on hand-made records: decomposition numbers, members that disagree,
// desync against capture windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "collectives/collective_op.hpp"
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

// A launch that never completed is placed on the stream one iteration back in issue (launch)
// order. Kernels of two pipeline links often start at the same instant (both wait on one peer),
// so start order is not issue order: here each iteration launches recv(17), send(19), recv(17),
// send(19), allreduce(21), but the second recv starts with (and sorts before) the first send.
TEST(Replay, PendingLaunchIsPlacedByIssueOrder) {
  ranks::RankTimeline tl;
  tl.utc_epoch_ns = 0;
  std::vector<CollectiveOp> ops;
  std::map<int32_t, uint32_t> seq;
  auto op = [&](int32_t stream, int64_t launch, int64_t start) {
    CollectiveOp o;
    o.stream = stream, o.seq = seq[stream]++, o.launch = launch, o.start = start, o.end = start + 50;
    ops.push_back(o);
  };
  std::vector<ranks::Iteration> its;
  for (int i = 0; i < 3; ++i) {
    const int64_t t = i * 1000;
    its.push_back({i, t, t + 900, 1000, i == 0});
    op(17, t + 1, t + 10), op(17, t + 3, t + 100), op(19, t + 2, t + 100), op(19, t + 4, t + 200), op(21, t + 5, t + 300);
  }
  std::stable_sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.start < b.start; });  // as extract_ops
  // The hung iteration: its first recv completed, the send after it was launched and never ran.
  op(17, 3001, 3010);
  tl.capture_end = 3010 + 2'000'000'000;
  tl.pending_nccl.push_back({3002, ranks::kNoName});
  auto p = pending_ops(tl, ops, its);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].stream, 19);
  EXPECT_EQ(p[0].seq, 6u);
  EXPECT_EQ(p[0].launch, 3002);
  // Too young at the capture end (cut mid-collective): not pending.
  tl.capture_end = 3010 + 1000;
  EXPECT_TRUE(pending_ops(tl, ops, its).empty());
}
