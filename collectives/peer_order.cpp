#include "peer_order.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace collectives {

PeerOrder::PeerOrder(std::vector<uint32_t> group, std::vector<int32_t> rank, std::vector<double> arrival,
                     std::vector<double> end, size_t groups)
    : group_(std::move(group)), rank_(std::move(rank)), arrival_(std::move(arrival)), end_(std::move(end)) {
  first_.assign(groups + 1, 0);
  for (uint32_t g : group_) ++first_[g + 1];
  for (size_t g = 0; g < groups; ++g) first_[g + 1] += first_[g];
  members_.resize(group_.size());
  std::vector<uint32_t> fill(first_.begin(), first_.end() - 1);
  for (uint32_t e = 0; e < group_.size(); ++e) members_[fill[group_[e]]++] = e;
  for (size_t g = 0; g < groups; ++g)  // by rank, then entry: find() takes a rank's first
    std::sort(members_.begin() + first_[g], members_.begin() + first_[g + 1],
              [&](uint32_t a, uint32_t b) { return rank_[a] != rank_[b] ? rank_[a] < rank_[b] : a < b; });
}

uint32_t PeerOrder::find(uint32_t g, int32_t r) const {
  const auto b = members_.begin() + first_[g], e = members_.begin() + first_[g + 1];
  const auto it = std::lower_bound(b, e, r, [&](uint32_t m, int32_t x) { return rank_[m] < x; });
  return it != e && rank_[*it] == r ? *it : UINT32_MAX;
}

bool PeerOrder::refuted(uint32_t earlier, uint32_t later) const {
  const uint32_t gx = group_[earlier], gy = group_[later];
  size_t before = 0, after = 0;
  int32_t last = rank_[earlier];  // a rank's first entry of the group only (a rank twice in an op)
  for (uint32_t i = first_[gx]; i < first_[gx + 1] && before + after < kVotes; ++i) {
    const uint32_t x = members_[i];
    if (rank_[x] == rank_[earlier] || (i > first_[gx] && rank_[x] == last)) continue;
    last = rank_[x];
    const uint32_t y = find(gy, rank_[x]);
    if (y == UINT32_MAX) continue;
    (arrival_[y] < end_[x] ? before : after) += 1;
  }
  return before > after;
}

void order_links(std::vector<LinkUse> uses, std::vector<uint32_t>& link) {
  // Each (rank, communicator)'s first use, then the rank's communicators of a family by it.
  std::sort(uses.begin(), uses.end(), [](const LinkUse& a, const LinkUse& b) {
    return std::tie(a.rank, a.comm, a.arrival, a.entry) < std::tie(b.rank, b.comm, b.arrival, b.entry);
  });
  std::vector<LinkUse> first;
  for (size_t i = 0; i < uses.size(); ++i)
    if (!i || uses[i].rank != uses[i - 1].rank || uses[i].comm != uses[i - 1].comm) first.push_back(uses[i]);
  std::sort(first.begin(), first.end(), [](const LinkUse& a, const LinkUse& b) {
    return std::tie(a.rank, a.family, a.arrival, a.comm) < std::tie(b.rank, b.family, b.arrival, b.comm);
  });
  std::vector<uint32_t> order(first.size());
  for (size_t i = 0; i < first.size(); ++i)
    order[i] = i && first[i].rank == first[i - 1].rank && first[i].family == first[i - 1].family ? std::min(order[i - 1] + 1, 0xffffu) : 0;
  // Back by (rank, communicator): every use of a communicator gets its order.
  std::vector<size_t> by_comm(first.size());
  for (size_t i = 0; i < first.size(); ++i) by_comm[i] = i;
  std::sort(by_comm.begin(), by_comm.end(), [&](size_t a, size_t b) {
    return std::tie(first[a].rank, first[a].comm) < std::tie(first[b].rank, first[b].comm);
  });
  size_t j = 0;
  for (const auto& u : uses) {  // uses are by (rank, comm), as by_comm is
    while (first[by_comm[j]].rank != u.rank || first[by_comm[j]].comm != u.comm) ++j;
    link[u.entry] = order[by_comm[j]];
  }
}

}  // namespace collectives
