// keep_link_ops on hand-made streams that serve two p2p links: which leftover ops it pairs as
// grouped exchanges (a receive that waited for a grouped kernel; a place that pairs in the other
// steps), which it must not (a short op of the other link inside a long wait), and that grouped
// exchanges give no clock edges.
#include <gtest/gtest.h>

#include <algorithm>

#include "collectives/collective_op.hpp"
#include "collectives/replay.hpp"

using namespace collectives;

namespace {
constexpr int64_t kMs = 1'000'000, kUs = 1'000, kTol = 10 * kUs;

struct Op {
  double start_ms, end_ms;
};
struct Stream {
  std::vector<std::vector<Op>> steps;  // each step's ops in issue order
};

MemberOps member(int rank, const Stream& s) {
  MemberOps m;
  m.rank = rank, m.capture_end = 10'000 * kMs;
  uint32_t seq = 0;
  for (size_t it = 0; it < s.steps.size(); ++it)
    for (const auto& o : s.steps[it]) {
      CollectiveOp op;
      op.start = int64_t(o.start_ms * double(kMs)), op.end = int64_t(o.end_ms * double(kMs));
      op.rank = rank, op.seq = seq++, op.iteration = int32_t(it), op.type = CollectiveType::SendRecv;
      m.ops.push_back(op);
    }
  return m;
}

size_t grouped(const MemberOps& m) {
  return size_t(std::count_if(m.ops.begin(), m.ops.end(), [](const CollectiveOp& o) { return o.grouped_exchange; }));
}

// Six steps of 100 ms. Two exchanges end together (10 and 70 ms), each side has an op of its other
// link (a at 20, b at 30), and `fourth(step, a, b)` adds one more op to either side.
template <class F>
std::vector<MemberOps> link(F fourth) {
  Stream a, b;
  for (int it = 0; it < 6; ++it) {
    const double t = 100.0 * it;
    std::vector<Op> sa = {{t + 10.1, t + 10.5}, {t + 20, t + 20.4}}, sb = {{t + 10.0, t + 10.5}, {t + 30, t + 30.4}};
    fourth(it, t, sa, sb);
    sa.push_back({t + 70.1, t + 70.5}), sb.push_back({t + 70.0, t + 70.5});
    a.steps.push_back(sa), b.steps.push_back(sb);
  }
  return {member(0, a), member(1, b)};
}
}  // namespace

// b posts its receive early (40 ms); a's grouped kernel starts at 50, its exchange with b ends
// 0.4 ms later, the kernel runs on to 58 with its other neighbour. In every step: no step pairs
// them by ends, only b's wait ties them.
TEST(LinkOps, PairsAReceiveThatWaitedForAGroupedKernel) {
  auto m = link([](int, double t, std::vector<Op>& a, std::vector<Op>& b) {
    a.push_back({t + 50, t + 58}), b.push_back({t + 40, t + 50.4});
  });
  keep_link_ops(m, 0, kTol);
  ASSERT_EQ(m[0].ops.size(), 18u);
  ASSERT_EQ(m[1].ops.size(), 18u);
  EXPECT_EQ(grouped(m[0]), 6u);
  EXPECT_EQ(grouped(m[1]), 6u);
  // a's op on this link ends with the exchange, b's wait is kept: 10 ms.
  EXPECT_EQ(m[0].ops[1].end, 50'400'000);
  EXPECT_EQ(m[1].ops[1].start, 40 * kMs);
  EXPECT_EQ(m[0].ops[1].seq, 1u);
  // Grouped exchanges say nothing of the clocks: the edge fits the 12 ops that ended together.
  const auto edges = comm_clock_edges(m);
  ASSERT_EQ(edges.size(), 1u);
  EXPECT_EQ(edges[0].ops, 12);
}

// A short op of a's other link lies inside b's long wait and lasts the transfer time: it did not
// wait for b (it started later), so nothing ties them, and b's op stays off the link.
TEST(LinkOps, LeavesAShortOpInsideALongWaitAlone) {
  auto m = link([](int, double t, std::vector<Op>& a, std::vector<Op>& b) {
    a.push_back({t + 45, t + 45.4}), b.push_back({t + 40, t + 58});
  });
  keep_link_ops(m, 0, kTol);
  EXPECT_EQ(m[0].ops.size(), 12u);
  EXPECT_EQ(m[1].ops.size(), 12u);
  EXPECT_EQ(grouped(m[0]), 0u);
}

// In steps 0-2 the third exchange ends together; from step 3 a's grouped kernel runs on after it
// (b started after a, so b did not wait): its place pairs it.
TEST(LinkOps, PairsByThePlaceThatPairsInOtherSteps) {
  auto m = link([](int it, double t, std::vector<Op>& a, std::vector<Op>& b) {
    if (it < 3) a.push_back({t + 50, t + 50.6}), b.push_back({t + 50.2, t + 50.6});
    else a.push_back({t + 50, t + 58}), b.push_back({t + 50.2, t + 50.6});
  });
  keep_link_ops(m, 0, kTol);
  ASSERT_EQ(m[0].ops.size(), 18u);
  ASSERT_EQ(m[1].ops.size(), 18u);
  EXPECT_EQ(grouped(m[0]), 3u);
  EXPECT_EQ(m[0].ops[10].end, 350'600'000);  // step 3's: ends with the exchange
  EXPECT_FALSE(m[0].ops[7].grouped_exchange);
}
