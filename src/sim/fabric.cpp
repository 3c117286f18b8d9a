#include "fabric.hpp"

#include <algorithm>
#include <set>

#include "rng.hpp"

namespace sim {

SimFabric draw_fabric(bool on, uint64_t seed, int nodes_per_pod) {
  SimFabric f;
  if (!on) return f;
  f.on = true;
  f.nodes_per_pod = nodes_per_pod;
  Rng r(hash4(seed, 0xFAB, 0, 0));
  // NVLink 4 (H100: ~360-400 GB/s busbw in nccl-tests), 8x400G InfiniBand rails (~40-50 GB/s per
  // GPU), and a spine between pods oversubscribed 3-6x.
  f.intra_bw = r.uniform(250, 400) * 1e9;
  f.inter_bw = r.uniform(35, 50) * 1e9;
  f.pod_bw = f.inter_bw / r.uniform(3, 6);
  f.intra_lat_us = r.uniform(0.4, 1.0);
  f.inter_lat_us = r.uniform(2.0, 4.0);
  f.pod_lat_us = f.inter_lat_us + r.uniform(2.0, 6.0);
  f.base_lat_us = r.uniform(5, 10);
  return f;
}

double ring_transfer_ns(const SimFabric& f, double bus_bytes, const std::vector<int>& hosts, bool all_reduce) {
  const size_t n = hosts.size();
  if (n < 2) return f.base_lat_us * 1e3;
  auto pod = [&](int h) { return f.nodes_per_pod > 0 ? h / f.nodes_per_pod : 0; };
  double step_lat = 0;  // one pass around the ring
  int worst = 0;        // 0 intra, 1 inter, 2 pod
  for (size_t i = 0; i < n; ++i) {
    const int a = hosts[i], b = hosts[(i + 1) % n];
    const int cls = a == b ? 0 : pod(a) == pod(b) ? 1 : 2;
    step_lat += cls == 0 ? f.intra_lat_us : cls == 1 ? f.inter_lat_us : f.pod_lat_us;
    worst = std::max(worst, cls);
  }
  // AllReduce: reduce-scatter then all-gather, 2(n-1) steps; each pass of n hops is n-1 steps of
  // the pipeline, approximated by the mean hop latency.
  const double passes = all_reduce ? 2.0 : 1.0;
  const double lat_us = f.base_lat_us + passes * step_lat * double(n - 1) / double(n);
  const double bw = worst == 0 ? f.intra_bw : worst == 1 ? f.inter_bw : f.pod_bw;
  return lat_us * 1e3 + bus_bytes / bw * 1e9;
}

}  // namespace sim
