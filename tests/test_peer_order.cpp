// The what-if's reading of program order from role peers (collectives/peer_order.hpp): a measured
// order that most peers contradict is refuted; a rank's links of one family are numbered by first
// use whatever the communicators' numbers.
#include <gtest/gtest.h>

#include "../collectives/peer_order.hpp"

namespace {

using collectives::LinkUse;
using collectives::PeerOrder;

// Entries 2r (group 0: an op ending at end[r]) and 2r + 1 (group 1: a later arrival) of ranks
// 0..3. Rank 0 arrives at group 1 after its group-0 op ended; peers as given.
struct TwoPoints {
  std::vector<uint32_t> group;
  std::vector<int32_t> rank;
  std::vector<double> arrival, end;
  explicit TwoPoints(const std::vector<bool>& peer_before) {
    for (int32_t r = 0; r < 4; ++r) {
      const double x_end = 10;
      const double y_arrival = r == 0 || !peer_before[size_t(r - 1)] ? 12 : 8;
      group.push_back(0), rank.push_back(r), arrival.push_back(5), end.push_back(x_end);
      group.push_back(1), rank.push_back(r), arrival.push_back(y_arrival), end.push_back(20);
    }
  }
  bool refuted() const { return PeerOrder(group, rank, arrival, end, 2).refuted(0, 1); }
};

TEST(PeerOrder, MostPeersArrivingBeforeTheEndRefuteTheWait) {
  EXPECT_TRUE(TwoPoints({true, true, true}).refuted());
  EXPECT_TRUE(TwoPoints({true, true, false}).refuted());
  EXPECT_FALSE(TwoPoints({true, false, false}).refuted());
  EXPECT_FALSE(TwoPoints({false, false, false}).refuted());
}

TEST(PeerOrder, NoPeerAtBothPointsRefutesNothing) {
  // Rank 0 alone in group 1: its peers hold only the op.
  const std::vector<uint32_t> group{0, 1, 0, 0};
  const std::vector<int32_t> rank{0, 0, 1, 2};
  const std::vector<double> arrival{5, 12, 5, 5}, end{10, 20, 10, 10};
  EXPECT_FALSE(PeerOrder(group, rank, arrival, end, 2).refuted(0, 1));
}

TEST(PeerOrder, LinksAreNumberedByFirstUseNotByCommunicator) {
  // Rank 0 uses communicator 7 first, then 3; rank 1 uses 2 first, then 9 (numbered the other
  // way). Another family's link is numbered on its own.
  const uint64_t pp = 11, other = 12;
  std::vector<LinkUse> uses{{0, pp, 10.0, 3, 0}, {0, pp, 5.0, 7, 1},  {0, pp, 15.0, 7, 2},
                            {1, pp, 4.0, 2, 3},  {1, pp, 9.0, 9, 4},  {0, other, 1.0, 40, 5}};
  std::vector<uint32_t> link(uses.size(), 99);
  collectives::order_links(uses, link);
  EXPECT_EQ(link, (std::vector<uint32_t>{1, 0, 0, 0, 1, 0}));
}

}  // namespace
