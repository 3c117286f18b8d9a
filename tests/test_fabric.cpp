// The fabric file and the collective cost model (topology/fabric.hpp, docs/fabric.md).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "topology/fabric.hpp"

using topology::Bound;
using topology::CostAlgo;

TEST(Fabric, ExampleFileParses) {
  const auto f = topology::read_fabric(std::string(SS_SOURCE_DIR) + "/docs/examples/fabric_h100_ib400.txt");
  EXPECT_EQ(f.gpus_per_node, 8);
  EXPECT_EQ(f.nodes_per_pod, 32);
  EXPECT_DOUBLE_EQ(f.inter_busbw_gbps, 350);
  EXPECT_DOUBLE_EQ(f.pod_busbw_gbps, 175);
}

TEST(Fabric, BadFilesAreOneLineNamingFileAndLine) {
  auto error = [](const std::string& text) {
    try {
      topology::parse_fabric(text, "f.txt");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("gpus_per_node = 8\nspeed = 3\n"), "f.txt:2: unknown key \"speed\" (docs/fabric.md lists them)");
  EXPECT_EQ(error("# c\ninter_busbw_gbps = fast\n"), "f.txt:2: inter_busbw_gbps must be a number in [0.001, 1000000], not \"fast\"");
  EXPECT_EQ(error("pod_busbw_gbps = 0\n"), "f.txt:1: pod_busbw_gbps must be a number in [0.001, 1000000], not \"0\"");
  EXPECT_EQ(error("gpus_per_node 8\n"), "f.txt:1: expected `key = value`");
  EXPECT_EQ(error(""), "no error");
  EXPECT_THROW(topology::read_fabric("/nonexistent/fabric.txt"), std::invalid_argument);
}

TEST(Fabric, RingAllReduceCostByBoundary) {
  topology::Fabric f;
  f.inter_busbw_gbps = 45, f.pod_busbw_gbps = 20;
  const double bytes = 2.0 * 511 / 512 * (256 << 20);  // 256 MiB all-reduce over 512 ranks
  const auto one_pod = topology::collective_cost(f, "AllReduce", CostAlgo::Ring, bytes, 256, 32, 1);
  const auto two_pods = topology::collective_cost(f, "AllReduce", CostAlgo::Ring, bytes, 512, 64, 2);
  EXPECT_NEAR(one_pod.bandwidth_us, bytes / 45e3, 1e-9);
  EXPECT_NEAR(two_pods.bandwidth_us, bytes / 20e3, 1e-9);  // the pod boundary halves the bandwidth
  EXPECT_EQ(two_pods.bound, Bound::Bandwidth);
  // Latency: 6.6 + (2*255 - 2*31) x 0.6 + 2*31 x 2.7 us.
  EXPECT_NEAR(one_pod.latency_us, 6.6 + (510 - 62) * 0.6 + 62 * 2.7, 1e-9);
  // Small messages on a long ring: latency-bound.
  const auto small = topology::collective_cost(f, "AllReduce", CostAlgo::Ring, 2.0 * 4096, 512, 64, 2);
  EXPECT_EQ(small.bound, Bound::Latency);
  // A tree's latency grows with log2 of the nodes.
  const auto tree = topology::collective_cost(f, "AllReduce", CostAlgo::Tree, bytes, 512, 64, 1);
  EXPECT_NEAR(tree.latency_us, 6.6 + 2 * ((512.0 / 64 - 1) * 0.6 + 6 * 2.7), 1e-9);
}
