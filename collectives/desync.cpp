#include "collectives/desync.hpp"

#include <algorithm>
#include <set>

namespace collectives {

void mark_root_causes(std::vector<DesyncRow>& desync, const std::vector<DesyncRow>& ended,
                      const std::vector<int32_t>& stuck, bool every_rank_read) {
  std::set<int32_t> blocked(stuck.begin(), stuck.end());
  for (const auto* rows : {static_cast<const std::vector<DesyncRow>*>(&desync), &ended})
    for (const auto& d : *rows) blocked.insert(d.blocked_ranks.begin(), d.blocked_ranks.end());
  for (auto& d : desync)
    d.root_cause = std::any_of(d.missing_ranks.begin(), d.missing_ranks.end(), [&](int32_t r) { return !blocked.count(r); });
  if (!every_rank_read || std::any_of(desync.begin(), desync.end(), [](const DesyncRow& d) { return d.root_cause; })) return;
  std::set<int32_t> waiting;  // blocked in an op whose missing members the rows name
  for (const auto* rows : {static_cast<const std::vector<DesyncRow>*>(&desync), &ended})
    for (const auto& d : *rows) waiting.insert(d.blocked_ranks.begin(), d.blocked_ranks.end());
  for (auto& d : desync)
    for (int32_t r : d.missing_ranks)
      if (!d.blocked_ranks.empty() && !waiting.count(r) && std::count(stuck.begin(), stuck.end(), r)) {
        d.root_cause = true;
        if (!std::count(d.crashed_ranks.begin(), d.crashed_ranks.end(), r)) d.crashed_ranks.push_back(r);
        d.stopped_in_launch.push_back(r);
      }
}

void number_in_pipeline_group(std::vector<DesyncRow>& desync, const std::vector<Communicator>& comms) {
  for (auto& d : desync) {
    if (d.comm < 0 || size_t(d.comm) >= comms.size() || d.missing_ranks.empty()) continue;
    const CommunicatorId& id = comms[size_t(d.comm)].id;
    if (!id.link()) continue;
    const int32_t r = d.missing_ranks.front();
    d.group_seq = 0;
    std::set<int32_t> counted;  // a stream serving both links of the group counts once
    for (size_t ci = 0; ci < comms.size(); ++ci) {
      const auto& c = comms[ci];
      if (!c.id.same_pipeline(id)) continue;
      for (const auto& m : c.members)
        if (m.rank == r && counted.insert(m.stream).second) d.group_seq += m.ops;
      for (const auto& e : desync)
        if (e.comm == int32_t(ci) && std::count(e.blocked_ranks.begin(), e.blocked_ranks.end(), r)) d.group_seq += 1;
    }
  }
}

}  // namespace collectives
