// Stragglers that share a place are one problem (issue 37): a node whose GPUs are all slow is one
// finding with one cost, not a straggler per GPU. The grouping is a pure function of the verdict,
// so the what-if replay (which prices each problem) and the report (which names it) agree.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/verdict.hpp"

namespace collectives {

struct StragglerGroup {
  std::string host;             // the place they share
  std::vector<size_t> members;  // indexes into Verdict::stragglers, ascending rank
};

// Stragglers on one host (two or more) form a group: a node-level fault (power, thermals, PCIe or
// NVLink, the host's CPU) touches every GPU on it, and the boring answer, one node degraded, is
// almost always the right one. Hosts in the order of their first straggler in the verdict.
std::vector<StragglerGroup> group_stragglers(const Verdict& v);

}  // namespace collectives
