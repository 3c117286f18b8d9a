// What one rank's GPU did in each iteration: the evidence for why a late rank is late.
//  compute_ns: summed durations of non-NCCL kernels starting in the iteration
//  kernels:    number of non-NCCL kernels starting in it
//  idle_ns:    time in [iteration start, next start) with no kernel running (SM idle): memory
//              copies do not count as busy, so a bubble that a host-side copy fills (pageable H2D
//              staging, a data loader's cudaMemcpy) shows as idle, as a host stall does
//  comm_ns:    time in it with an NCCL kernel running and no compute kernel (exposed
//              communication: waiting and transferring that held the GPU's work up). A gradient
//              bucket waiting on the DP stream while the backward runs is not in it; the tail
//              after the backward, while the chain of buckets a late peer delayed drains, is.
//  top kernels: the rank's `top` compute kernels by total time, with per-iteration totals, so
//               the same kernel can be compared across ranks (slow GPU vs extra work)
#pragma once
#include <string>
#include <vector>

#include "ranks/metrics.hpp"

namespace ranks {

struct IterationWork {
  std::vector<double> compute_ns, kernels, idle_ns, comm_ns;
  std::vector<std::string> top_names;
  std::vector<std::vector<double>> name_ns, name_count;  // [top name][iteration]
};

IterationWork iteration_work(const RankTimeline& tl, const std::vector<Iteration>& its, size_t top = 8);

}  // namespace ranks
