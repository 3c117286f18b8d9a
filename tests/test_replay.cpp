// Replay of one communicator on hand-made records: decomposition numbers, members that disagree,
// desync against capture windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "collectives/collective_op.hpp"
#include "collectives/replay.hpp"
#include "collectives/root_blame.hpp"

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
  auto hung = member(2, {{0, 10}, {100, 110}, {200, 210}}, 5'000'000'000);
  RankAccumulator acc(3);
  auto r = replay_communicator({full(0), full(1), hung}, identity(3), acc);
  ASSERT_EQ(r.desync.size(), 1u);
  EXPECT_EQ(r.desync[0].seq, 3u);
  EXPECT_EQ(r.desync[0].missing_ranks, std::vector<int32_t>{2});
  // Same counts, but rank 2's capture ended at 250 ns, before the others reached op 3 (t=300).
  auto cut = member(2, {{0, 10}, {100, 110}, {200, 210}}, 250);
  auto r2 = replay_communicator({full(0), full(1), cut}, identity(3), acc);
  EXPECT_TRUE(r2.desync.empty());
  ASSERT_EQ(r2.capture_ended.size(), 1u);
  EXPECT_EQ(r2.capture_ended[0].seq, 3u);
  EXPECT_EQ(r2.capture_ended[0].missing_ranks, std::vector<int32_t>{2});
  // Blocked: rank 0 launched op 3 and waits in it, rank 1 never got there.
  auto a = member(0, {{0, 10}, {100, 110}, {200, 210}});
  a.pending_next = true;
  auto b = member(1, {{0, 10}, {100, 110}, {200, 210}}, 5'000'000'000);
  auto r3 = replay_communicator({a, b}, identity(2), acc);
  ASSERT_EQ(r3.desync.size(), 1u);
  EXPECT_EQ(r3.desync[0].seq, 3u);
  EXPECT_EQ(r3.desync[0].missing_ranks, std::vector<int32_t>{1});
  EXPECT_EQ(r3.desync[0].blocked_ranks, std::vector<int32_t>{0});
}

namespace {
// A training-like communicator: `iters` iterations of a step_ns period, `per_iter` ops 300 us apart.
std::vector<std::pair<int64_t, int64_t>> steps(int iters, int per_iter, int64_t step_ns, int64_t late = 0) {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (int i = 0; i < iters; ++i)
    for (int k = 0; k < per_iter; ++k) {
      const int64_t s = i * step_ns + k * 300'000 + late;
      v.push_back({s, i * step_ns + k * 300'000 + 200'000});
    }
  return v;
}
}  // namespace

// A capture that stops earlier (nsys --duration, a trimmed export) is no desync, even when the
// others reached their next op before it stopped: they were waiting for it, and a healthy member
// would have arrived within the communicator's usual quiet gap. Only a capture that goes on well
// past that (a hang runs until the job is killed) makes the member missing.
TEST(Replay, CaptureThatEndsEarlyIsNotADesync) {
  const int64_t step = 100'000'000;  // 100 ms steps, 4 ops each: the longest quiet gap ~99 ms
  auto a = member(0, steps(10, 4, step)), b = member(1, steps(10, 4, step));
  // Rank 2 stopped after 7 iterations; the others reached op 28 at 700 ms; its capture ended 40 ms
  // later, mid-way through its compute.
  auto c = member(2, steps(7, 4, step), 740'000'000);
  RankAccumulator acc(3);
  auto r = replay_communicator({a, b, c}, identity(3), acc);
  EXPECT_TRUE(r.desync.empty());
  ASSERT_EQ(r.capture_ended.size(), 1u);
  EXPECT_EQ(r.capture_ended[0].seq, 28u);
  EXPECT_EQ(r.capture_ended[0].missing_ranks, std::vector<int32_t>{2});
  EXPECT_EQ(r.ops.size(), 28u);  // matched up to the shortest
  // The margin is the larger of twice the longest gap and the 1 s floor.
  EXPECT_EQ(r.hang_margin_ns, kMinHangMarginNs);
  // Its capture went on 1.2 s past the others' arrival: it never got there.
  c.capture_end = 700'000'000 + 1'200'000'000;
  auto h = replay_communicator({a, b, c}, identity(3), acc);
  ASSERT_EQ(h.desync.size(), 1u);
  EXPECT_EQ(h.desync[0].missing_ranks, std::vector<int32_t>{2});
  EXPECT_TRUE(h.capture_ended.empty());
  // Slow steps (1 s): twice the longest gap (2 s) is the margin; 1.2 s later is no proof.
  auto sa = member(0, steps(10, 4, 1'000'000'000)), sb = member(1, steps(10, 4, 1'000'000'000));
  auto sc = member(2, steps(7, 4, 1'000'000'000), 7'000'000'000 + 1'200'000'000);
  auto s = replay_communicator({sa, sb, sc}, identity(3), acc);
  EXPECT_TRUE(s.desync.empty());
  EXPECT_EQ(s.capture_ended.size(), 1u);
  EXPECT_GT(s.hang_margin_ns, 1'900'000'000);
  // The capture end is compared on the corrected clock: rank 2's clock runs 1.5 s ahead, so its
  // raw capture end 1.7 s past the others' arrival is only 0.2 s past.
  auto k = identity(3);
  k.offset_ns[2] = 1'500'000'000;
  auto c2 = member(2, steps(7, 4, step), int64_t(700'000'000) + 1'700'000'000);
  for (auto& op : c2.ops) op.start += 1'500'000'000, op.end += 1'500'000'000;
  auto o = replay_communicator({a, b, c2}, k, acc);
  EXPECT_TRUE(o.desync.empty());
  EXPECT_EQ(o.capture_ended.size(), 1u);
}

// Members blocked in a launched, never finished op count as arrived at their launch: a member
// whose capture ended right after that is not missing; one whose capture went on is.
TEST(Replay, BlockedMembersArriveAtTheirLaunch) {
  auto a = member(0, {{0, 10}, {100, 110}});
  a.pending_next = true, a.pending_launch = 200;
  auto cut = member(1, {{0, 10}, {100, 110}}, 300);
  RankAccumulator acc(2);
  auto r = replay_communicator({a, cut}, identity(2), acc);
  EXPECT_TRUE(r.desync.empty());
  ASSERT_EQ(r.capture_ended.size(), 1u);
  EXPECT_EQ(r.capture_ended[0].blocked_ranks, std::vector<int32_t>{0});
  auto hung = member(1, {{0, 10}, {100, 110}}, 200 + 2 * kMinHangMarginNs);
  auto h = replay_communicator({a, hung}, identity(2), acc);
  ASSERT_EQ(h.desync.size(), 1u);
  EXPECT_EQ(h.desync[0].seq, 2u);
  EXPECT_EQ(h.desync[0].missing_ranks, std::vector<int32_t>{1});
  EXPECT_EQ(h.desync[0].blocked_ranks, std::vector<int32_t>{0});
}

// A hang in a 4-stage pipeline (1F1B): the last stage, rank 3, stops issuing. Stage 2 blocks in
// its send to stage 3 (pending on link 2-3), which leaves stage 1 blocked on link 1-2 and stage 0
// on link 0-1. Each link reports its first missing op; only link 2-3 misses a rank that is blocked
// nowhere (the root cause: cross_rank marks the others as victims through their blocked ranks).
TEST(Replay, PipelineHangMissesTheHungRankOnlyOnItsOwnLink) {
  const int64_t cap = 5'000'000'000;
  auto link = [&](int s, int t, size_t n, bool s_pending, bool t_pending) {
    auto a = member(s, steps(1, int(n), 1'000'000'000), cap, CollectiveType::SendRecv);
    auto b = member(t, steps(1, int(n), 1'000'000'000), cap, CollectiveType::SendRecv);
    a.pending_next = s_pending, b.pending_next = t_pending;
    a.pending_launch = s_pending ? int64_t(n) * 300'000 : 0;
    b.pending_launch = t_pending ? int64_t(n) * 300'000 : 0;
    return std::vector<MemberOps>{a, b};
  };
  RankAccumulator acc(4);
  auto l01 = replay_communicator(link(0, 1, 37, true, false), identity(4), acc);
  auto l12 = replay_communicator(link(1, 2, 31, true, false), identity(4), acc);
  auto l23 = replay_communicator(link(2, 3, 25, true, false), identity(4), acc);
  for (auto* r : {&l01, &l12, &l23}) ASSERT_EQ(r->desync.size(), 1u);
  EXPECT_EQ(l01.desync[0].seq, 37u);
  EXPECT_EQ(l01.desync[0].missing_ranks, std::vector<int32_t>{1});
  EXPECT_EQ(l01.desync[0].blocked_ranks, std::vector<int32_t>{0});
  EXPECT_EQ(l12.desync[0].missing_ranks, std::vector<int32_t>{2});
  EXPECT_EQ(l23.desync[0].seq, 25u);
  EXPECT_EQ(l23.desync[0].missing_ranks, std::vector<int32_t>{3});
  EXPECT_EQ(l23.desync[0].blocked_ranks, std::vector<int32_t>{2});
  // Both members of a link blocked in the same op: no one is missing there.
  auto both = replay_communicator(link(0, 1, 10, true, true), identity(4), acc);
  EXPECT_TRUE(both.desync.empty());
  EXPECT_TRUE(both.capture_ended.empty());
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

// A crash: rank 1's capture ended (its process died) before the op, while rank 0 stayed blocked
// in it for 60 s, recorded all along. Rank 1 is missing and crashed, not merely cut off.
TEST(Replay, MemberWhoseCaptureEndedWhileOthersStayedBlockedCrashed) {
  auto blocked = member(0, {{0, 10}, {100, 110}}, 60'000'000'300);
  blocked.pending_next = true, blocked.pending_launch = 300;
  auto crashed = member(1, {{0, 10}, {100, 110}}, 250);
  RankAccumulator acc(3);
  auto r = replay_communicator({blocked, crashed}, identity(3), acc);
  ASSERT_EQ(r.desync.size(), 1u);
  EXPECT_EQ(r.desync[0].seq, 2u);
  EXPECT_EQ(r.desync[0].missing_ranks, std::vector<int32_t>{1});
  EXPECT_EQ(r.desync[0].crashed_ranks, std::vector<int32_t>{1});
  EXPECT_EQ(r.desync[0].blocked_ranks, std::vector<int32_t>{0});
  EXPECT_TRUE(r.capture_ended.empty());
  // Blocked only half a second past its launch when its own capture ended: no proof.
  blocked.capture_end = 300 + 500'000'000;
  auto s = replay_communicator({blocked, crashed}, identity(3), acc);
  EXPECT_TRUE(s.desync.empty());
  ASSERT_EQ(s.capture_ended.size(), 1u);
  EXPECT_EQ(s.capture_ended[0].missing_ranks, std::vector<int32_t>{1});
  // A member completed the op: every member joined it, so rank 1's capture merely ended.
  blocked.capture_end = 60'000'000'300;
  auto done = member(2, {{0, 10}, {100, 110}, {300, 400}}, 60'000'000'300);
  auto c = replay_communicator({blocked, crashed, done}, identity(3), acc);
  EXPECT_TRUE(c.desync.empty());
  EXPECT_EQ(c.capture_ended.size(), 1u);
}

// Without iterations (no step markers, too few repetitions to infer them) a pending launch goes
// to the stream whose earlier issue context matches the latest one: recv(17), send(19), recv(17),
// send(19), allreduce(21) per iteration; stream ids are whatever the process numbered them.
TEST(Replay, PendingLaunchIsPlacedWithoutIterations) {
  ranks::RankTimeline tl;
  std::vector<CollectiveOp> ops;
  std::map<int32_t, uint32_t> seq;
  auto op = [&](int32_t stream, int64_t launch, CollectiveType type) {
    CollectiveOp o;
    o.stream = stream, o.seq = seq[stream]++, o.launch = launch, o.start = launch + 10, o.end = launch + 50;
    o.type = type;
    ops.push_back(o);
  };
  const auto p2p = CollectiveType::SendRecv, ar = CollectiveType::AllReduce;
  for (int i = 0; i < 2; ++i) {
    const int64_t t = i * 1000;
    op(17, t + 1, p2p), op(19, t + 2, p2p), op(17, t + 3, p2p), op(19, t + 4, p2p), op(21, t + 5, ar);
  }
  op(17, 2001, p2p);
  tl.capture_end = 2010 + 2'000'000'000;
  tl.pending_nccl.push_back({2002, tl.names.intern("ncclSend")});
  auto p = pending_ops(tl, ops, {});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].stream, 19);
  EXPECT_EQ(p[0].seq, 4u);  // two sends per iteration before it
  // An all-reduce call after the iteration's four p2p ops: the all-reduce stream.
  op(19, 2002, p2p), op(17, 2003, p2p), op(19, 2004, p2p);
  tl.pending_nccl = {{2005, tl.names.intern("ncclAllReduce")}};
  p = pending_ops(tl, ops, {});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].stream, 21);
  EXPECT_EQ(p[0].seq, 2u);
}

// Without NCCL NVTX ranges nothing names an unfinished launch: its place in the launch sequence
// does. Each iteration launches gemm (stream 7), all-reduce (13), gelu (7), all-gather (15), 1000
// ns apart; in the fourth, gemm completed, then the all-reduce, gelu and all-gather launches never
// completed, and the GPU sat idle for 60 s until the capture ended.
namespace {
struct Launches {
  ranks::RankTimeline tl;
  std::vector<CollectiveOp> ops;
  std::map<int32_t, uint32_t> seq;
  uint32_t call = 0;
  void kernel(const char* name, int32_t stream, bool nccl, int64_t launch) {
    auto& k = tl.kernels;
    k.start.push_back(launch + 100), k.end.push_back(launch + 600), k.stream.push_back(stream);
    k.name.push_back(tl.names.intern(name)), k.launch.push_back(launch), k.is_nccl.push_back(nccl);
    k.nccl_api.push_back(ranks::kNoName);
    if (!nccl) return;
    CollectiveOp o;
    o.stream = stream, o.seq = seq[stream]++, o.launch = launch, o.start = launch + 100, o.end = launch + 600;
    ops.push_back(o);
  }
  // lost: launch time of an all-reduce whose kernel record is missing (CUPTI dropped it).
  explicit Launches(int64_t lost = -1) {
    call = tl.names.intern("cuLaunchKernelEx");
    tl.nccl_launch_apis = {call};
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t t = i * 10'000;
      kernel("gemm", 7, false, t);
      if (t + 1000 == lost) tl.unfinished_launches.push_back({lost, call});
      else kernel("ncclDevKernel_AllReduce", 13, true, t + 1000);
      kernel("gelu", 7, false, t + 2000), kernel("ncclDevKernel_AllGather", 15, true, t + 3000);
    }
    kernel("gemm", 7, false, 30'000);
    for (int64_t t : {31'000, 32'000, 33'000}) tl.unfinished_launches.push_back({t, call});
    tl.capture_end = 60'000'000'000;
  }
};
}  // namespace

TEST(Replay, UnlabeledUnfinishedLaunchesArePlacedByTheLaunchSequence) {
  Launches l;
  auto p = pending_ops(l.tl, l.ops, {});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].stream, 13);
  EXPECT_EQ(p[0].seq, 3u);
  EXPECT_EQ(p[0].launch, 31'000);
  EXPECT_EQ(p[1].stream, 15);
  EXPECT_EQ(p[1].seq, 3u);
  EXPECT_EQ(p[1].launch, 33'000);
  // With iterations known the result is the same (the sequence, not the period, places them).
  std::vector<ranks::Iteration> its;
  for (int i = 0; i < 4; ++i) its.push_back({i, i * 10'000, i * 10'000 + 9'000, 10'000, i == 0});
  EXPECT_EQ(pending_ops(l.tl, l.ops, its).size(), 2u);
}

TEST(Replay, UnlabeledUnfinishedLaunchesThatAreNotAHang) {
  {  // the capture was cut right after them (ends mid-iteration): too young
    Launches l;
    l.tl.capture_end = 34'000;
    EXPECT_TRUE(pending_ops(l.tl, l.ops, {}).empty());
  }
  {  // the GPU ran until the capture ended: not stuck
    Launches l;
    l.kernel("gemm", 7, false, l.tl.capture_end - 5'000'000);
    EXPECT_TRUE(pending_ops(l.tl, l.ops, {}).empty());
  }
  {  // launched by a call this process never launched NCCL kernels with
    Launches l;
    for (auto& u : l.tl.unfinished_launches) u.api = l.tl.names.intern("cudaLaunchKernel_v7000");
    EXPECT_TRUE(pending_ops(l.tl, l.ops, {}).empty());
  }
  {  // the all-reduce completed, only the gelu launch after it did not: a compute kernel's place
    Launches l;
    l.kernel("ncclDevKernel_AllReduce", 13, true, 31'000);
    l.tl.unfinished_launches = {{32'000, l.call}};
    EXPECT_TRUE(pending_ops(l.tl, l.ops, {}).empty());
  }
  {  // a lost record mid-run (later kernels on its stream completed) is no blocked op; the
     // ones at the end still are
    Launches l(11'000);
    auto p = pending_ops(l.tl, l.ops, {});
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].stream, 13);
    EXPECT_EQ(p[0].seq, 2u);
    EXPECT_EQ(p[0].launch, 31'000);
  }
}

// docs/analyses.md's worked example of root blame: A (0) is slow; B (1) waits on it in their TP
// all-reduce, then reaches its DP all-reduce with C (2) late and holds C there.
TEST(RootBlame, WorkedExampleChargesTheChainToItsStart) {
  using namespace collectives;
  constexpr int64_t ms = 1'000'000;
  BlameRecords r;
  r.ops.push_back({0, 10 * ms, 10 * ms, double(10 * ms)});  // TP: last A at 10, B at 0
  r.members.push_back({1, 0, 0, 10 * ms});
  r.members.push_back({0, 0, 10 * ms, 0});
  r.ops.push_back({1, 11 * ms, 9 * ms, double(9 * ms)});  // DP: last B at 11, C at 2
  r.members.push_back({2, 1, 2 * ms, 9 * ms});
  r.members.push_back({1, 1, 11 * ms, 0});
  const RootBlame b = root_blame(r, 3);
  EXPECT_DOUBLE_EQ(b.direct_ns[0], 10.0 * ms);
  EXPECT_DOUBLE_EQ(b.direct_ns[1], 9.0 * ms);
  EXPECT_DOUBLE_EQ(b.propagated_ns[1], 9.0 * ms);
  EXPECT_DOUBLE_EQ(b.root_ns[0], 19.0 * ms);
  EXPECT_DOUBLE_EQ(b.root_ns[1], 0.0);
  EXPECT_DOUBLE_EQ(b.root_ns[2], 0.0);
  // A rank late by more than it had waited keeps the rest as its own.
  // (B reaches the DP all-reduce at 22 ms: C waits 20 ms, of which B's shift explains 10.)
  r.ops[1].last_arrival = 22 * ms, r.ops[1].lateness = 20 * ms, r.ops[1].blame = double(20 * ms);
  r.members[2].wait = 20 * ms, r.members[3].arrival = 22 * ms;
  const RootBlame c = root_blame(r, 3);
  EXPECT_DOUBLE_EQ(c.propagated_ns[1], 10.0 * ms);  // p = 10 / 20
  EXPECT_DOUBLE_EQ(c.root_ns[1], 10.0 * ms);
  EXPECT_DOUBLE_EQ(c.root_ns[0], 20.0 * ms);
  double direct = 0, root = 0;  // conserved
  for (int i = 0; i < 3; ++i) direct += c.direct_ns[size_t(i)], root += c.root_ns[size_t(i)];
  EXPECT_DOUBLE_EQ(direct, root);
}
