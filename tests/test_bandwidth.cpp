// Bus bandwidth as nccl-tests defines it (collectives/bandwidth.hpp).
#include <gtest/gtest.h>

#include <cmath>

#include "collectives/bandwidth.hpp"

using collectives::CollectiveType;

TEST(Bandwidth, FactorsOfNcclTests) {
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::ReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::AllGather, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::AllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::Broadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::SendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::Generic, 8), 0.0);
  EXPECT_DOUBLE_EQ(collectives::bus_factor(CollectiveType::AllReduce, 0), 0.0);
}

TEST(Bandwidth, BusBandwidthFromMessageSizeAndTransfer) {
  // 256 MiB all-reduce over 8 ranks in 3 ms: algbw 89.48 GB/s, busbw x 1.75 = 156.59 GB/s.
  EXPECT_NEAR(collectives::bus_bandwidth_gbps(CollectiveType::AllReduce, 256 << 20, 8, 3e6), 268435456.0 / 3e6 * 1.75, 1e-9);
  // All-gather: S is the whole array, the per-rank message x n.
  EXPECT_NEAR(collectives::bus_bandwidth_gbps(CollectiveType::AllGather, 1 << 20, 4, 1e5), 4.0 * 1048576 / 1e5 * 0.75, 1e-9);
  EXPECT_EQ(collectives::operation_bytes(CollectiveType::ReduceScatter, 100, 8), 800);
  EXPECT_EQ(collectives::operation_bytes(CollectiveType::AllReduce, 100, 8), 100);
  // Unknown size, time or traffic: NaN, never 0.
  EXPECT_TRUE(std::isnan(collectives::bus_bandwidth_gbps(CollectiveType::AllReduce, -1, 8, 3e6)));
  EXPECT_TRUE(std::isnan(collectives::bus_bandwidth_gbps(CollectiveType::AllReduce, 1 << 20, 8, 0)));
  EXPECT_TRUE(std::isnan(collectives::bus_bandwidth_gbps(CollectiveType::Generic, 1 << 20, 8, 1e6)));
  EXPECT_EQ(collectives::operation_bytes(CollectiveType::AllGather, INT64_MAX / 2, 8), -1);  // no overflow
}
