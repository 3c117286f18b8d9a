// Slow links of the verdict (verdict.hpp, "Slow links"; a private header of collectives/verdict.cpp).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "collectives/verdict.hpp"

namespace collectives {

// Fills v.slow_links; per rank, its slowest communicator against its like and its slow ones.
void find_slow_links(const std::vector<CommEvidence>& comms, const VerdictOptions& opt, Verdict& v,
                     std::map<int, double>& rank_link_ratio, std::map<int, std::set<std::string>>& rank_slow_comms);

// Every one of `slow_comms` is named in some slow link (and there is one): the link is the finding.
bool explained_by_slow_links(const std::vector<SlowLink>& links, const std::set<std::string>& slow_comms);

}  // namespace collectives
