// Slow links of the verdict (verdict.hpp, "Slow links"; a private header of collectives/verdict.cpp).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "collectives/verdict.hpp"

namespace collectives {

// Fills v.slow_links; per rank, its slowest communicator against its like and its slow ones.
// Links slow over the whole capture first, then links that turned slow at some iteration and stayed
// so (per-iteration medians against their like's in the same iteration); `numbers`: the iteration
// numbers by index (empty: the index), for the onset.
void find_slow_links(const std::vector<CommEvidence>& comms, const VerdictOptions& opt, Verdict& v,
                     std::map<int, double>& rank_link_ratio, std::map<int, std::set<std::string>>& rank_slow_comms,
                     const std::vector<int64_t>& numbers = {});

// Every one of `slow_comms` is named in some slow link (and there is one): the link is the finding.
bool explained_by_slow_links(const std::vector<SlowLink>& links, const std::set<std::string>& slow_comms);

}  // namespace collectives
