#include "slow_links.hpp"

#include <algorithm>

#include "collectives/communicators.hpp"
#include "common/stats.hpp"

namespace collectives {

using common::median;

// Slow communicators: compared only with their like (same family, or every two-member SendRecv
// link for pipeline p2p, and the same number of hosts: NVLink inside a host is not a slow NIC).
void find_slow_links(const std::vector<CommEvidence>& comms, const VerdictOptions& opt, Verdict& v,
                     std::map<int, double>& rank_link_ratio, std::map<int, std::set<std::string>>& rank_slow_comms) {
  std::map<std::pair<uint64_t, size_t>, std::vector<const CommEvidence*>> groups;
  for (const auto& c : comms) {
    const bool p2p = c.type == CollectiveType::SendRecv && c.ranks.size() == 2;
    if (p2p && c.family == kThinLinkFamily) continue;
    groups[{p2p ? 0 : c.family, c.hosts.size()}].push_back(&c);
  }
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    // Baseline: the faster half's median (lower quartile), so that a link slowing half of a
    // small group still stands out.
    std::vector<double> t;
    for (const auto* c : members) t.push_back(c->median_transfer_ns);
    std::sort(t.begin(), t.end());
    const double base = median(std::vector<double>(t.begin(), t.begin() + long((t.size() + 1) / 2)));
    std::vector<const CommEvidence*> slow;
    std::vector<double> ratios;
    for (const auto* c : members) {
      const double ratio = base > 0 ? c->median_transfer_ns / base : 1.0;
      for (int r : c->ranks) {
        rank_link_ratio[r] = std::max(rank_link_ratio[r], ratio);
        if (ratio >= opt.slow_link_ratio) rank_slow_comms[r].insert(c->name);
      }
      if (ratio >= opt.slow_link_ratio) slow.push_back(c), ratios.push_back(ratio);
    }
    if (slow.empty() || double(slow.size()) > opt.slow_link_max_share * double(members.size())) continue;  // half slow is the norm, not a link
    // The hosts every slow communicator spans (else those most of them span): a ring is as slow as
    // its slowest hop, so a link is only narrowed down as far as the communicators allow.
    std::map<std::string, size_t> seen;
    for (const auto* c : slow)
      for (const auto& h : c->hosts)
        if (!h.empty()) seen[h]++;  // "": a profile that names no host (PyTorch traces); never a host
    SlowLink link;
    for (const auto& [h, n] : seen)
      if (n == slow.size()) link.hosts.push_back(h);
    if (link.hosts.empty())
      for (const auto& [h, n] : seen)
        if (2 * n > slow.size()) link.hosts.push_back(h);
    for (const auto* c : slow) link.communicators.push_back(c->name);
    link.collective = collective_name(slow.front()->type);
    link.slowdown = median(ratios);
    v.slow_links.push_back(std::move(link));
  }
  // One link seen by several groups (all-reduce and p2p over a host's NIC) is one row: rows that
  // share hosts merge into the hosts they share.
  auto& L = v.slow_links;
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < L.size() && !merged; ++i)
      for (size_t j = i + 1; j < L.size() && !merged; ++j) {
        std::vector<std::string> both;
        std::set_intersection(L[i].hosts.begin(), L[i].hosts.end(), L[j].hosts.begin(), L[j].hosts.end(),
                              std::back_inserter(both));
        if (both.empty()) continue;
        L[i].hosts = both;
        L[i].communicators.insert(L[i].communicators.end(), L[j].communicators.begin(), L[j].communicators.end());
        if (L[j].slowdown > L[i].slowdown) L[i].slowdown = L[j].slowdown, L[i].collective = L[j].collective;
        L.erase(L.begin() + long(j)), merged = true;
      }
  }
}

bool explained_by_slow_links(const std::vector<SlowLink>& links, const std::set<std::string>& slow_comms) {
  for (const auto& name : slow_comms) {
    bool listed = false;
    for (const auto& l : links) listed |= std::find(l.communicators.begin(), l.communicators.end(), name) != l.communicators.end();
    if (!listed) return false;
  }
  return !slow_comms.empty();
}

}  // namespace collectives
