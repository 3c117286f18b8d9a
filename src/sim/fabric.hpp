// The generator's fabric for the scaling scenarios (issue 21): NCCL's ring cost over three link
// classes, with parameters drawn per seed so that nothing downstream can rely on one value set.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sim {

struct SimFabric {
  bool on = false;     // false: the original two-class model (schedule.cpp)
  int nodes_per_pod = 0;  // 0: one pod
  // Bus bandwidth (bytes/s of nccl-tests busbw) and per-step latency (us) per link class.
  double intra_bw = 150e9, inter_bw = 20e9, pod_bw = 20e9;
  double intra_lat_us = 0.6, inter_lat_us = 2.7, pod_lat_us = 2.7, base_lat_us = 8.0;
};

// Parameters drawn from `seed` (ranges in SPEC.md, Fabric); `on` only when seed or pods are given.
SimFabric draw_fabric(bool on, uint64_t seed, int nodes_per_pod);

// Ring transfer time (ns) of a collective with `bus_bytes` on the wire per rank, over `members`
// whose hosts are host_of[i]: latency per ring step by the class of each hop of the ring (ranks in
// order, as NCCL's ring follows the rank order within and across nodes), bandwidth of the slowest
// class on the ring.
double ring_transfer_ns(const SimFabric& f, double bus_bytes, const std::vector<int>& hosts, bool all_reduce);

}  // namespace sim
