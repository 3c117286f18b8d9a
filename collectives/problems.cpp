#include "collectives/problems.hpp"

#include <algorithm>
#include <map>

namespace collectives {

std::vector<StragglerGroup> group_stragglers(const Verdict& v) {
  std::vector<StragglerGroup> out;
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < v.stragglers.size(); ++i) {
    const auto& s = v.stragglers[i];
    if (s.host.empty()) continue;  // no host known: nothing ties it to others
    auto [it, fresh] = at.try_emplace(s.host, out.size());
    if (fresh) out.push_back({s.host, {}});
    out[it->second].members.push_back(i);
  }
  std::vector<StragglerGroup> groups;
  for (auto& g : out) {
    if (g.members.size() < 2) continue;
    std::sort(g.members.begin(), g.members.end(),
              [&](size_t a, size_t b) { return v.stragglers[a].rank < v.stragglers[b].rank; });
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace collectives
