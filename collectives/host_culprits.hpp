// Ranks of one host slower than their stage peers on other hosts (verdict.hpp, "Who"; a private
// header of collectives/verdict.cpp).
//
// A rank is compared with the median of its role (pipeline stage). When one host holds a large
// share of a role (a 4-GPU host in a 16-rank TP2 x PP2 x DP4 job holds half of its stage), a fault
// of the whole host from the first steady iteration moves that median with it and no rank stands
// out, and there is no change point to compare against. Hosts are then compared instead: the
// median own time (step less exposed waits) of a host's ranks in a role against the median of
// the role's ranks on every other host. GPUs of one model doing the same work differ by a few
// percent at most (+-2% in healthy runs); a host whose ranks run >= slow_ratio longer in most
// iterations, and hold their peers back (blame), is the slow one. Of its ranks in the role, those
// that are themselves that much slower are named; two or more, or it is one rank's business.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace collectives {

struct HostCulpritOptions {
  double slow_ratio = 1.08;  // host median own time against the other hosts' median
  double hold = 0.75;        // ... in at least this share of the iterations
  double min_blame = 0.01;   // each named rank's blame >= this share of the run time
};

// own[i][it]: rank i's own time (ms) per iteration index in [1, common); role[i], host[i];
// blame_ms[i]: peers' waiting on it over [1, common); run_ms: the run time over [1, common).
// Returns indexes into own, ascending.
std::vector<size_t> slow_host_ranks(const std::vector<std::vector<double>>& own, const std::vector<int>& role,
                                    const std::vector<std::string>& host, const std::vector<double>& blame_ms,
                                    size_t common, double run_ms, const HostCulpritOptions& opt = {});

}  // namespace collectives
