#include "host_culprits.hpp"

#include <algorithm>
#include <map>

#include "common/stats.hpp"

namespace collectives {

namespace {

// Median own time per iteration of `idx`, and over the whole stretch.
double median_over(const std::vector<std::vector<double>>& own, const std::vector<size_t>& idx, size_t it) {
  std::vector<double> v;
  for (size_t i : idx) v.push_back(own[i][it]);
  return common::median(v);
}

double mean_own(const std::vector<double>& own, size_t common) {
  double s = 0;
  for (size_t it = 1; it < common; ++it) s += own[it];
  return s / double(common - 1);
}

}  // namespace

std::vector<size_t> slow_host_ranks(const std::vector<std::vector<double>>& own, const std::vector<int>& role,
                                    const std::vector<std::string>& host, const std::vector<double>& blame_ms,
                                    size_t common, double run_ms, const HostCulpritOptions& opt) {
  std::vector<size_t> out;
  if (common < 3) return out;
  std::map<int, std::map<std::string, std::vector<size_t>>> by_role;  // role -> host -> ranks
  for (size_t i = 0; i < own.size(); ++i)
    if (!host[i].empty() && own[i].size() >= common) by_role[role[i]][host[i]].push_back(i);
  for (const auto& [r, hosts] : by_role) {
    if (hosts.size() < 2) continue;  // one host: nothing on another to compare with
    for (const auto& [h, mine] : hosts) {
      std::vector<size_t> others;
      for (const auto& [g, theirs] : hosts)
        if (g != h) others.insert(others.end(), theirs.begin(), theirs.end());
      size_t slow_its = 0;
      std::vector<double> base;
      for (size_t it = 1; it < common; ++it) {
        const double b = median_over(own, others, it);
        base.push_back(b);
        slow_its += b > 0 && median_over(own, mine, it) >= opt.slow_ratio * b;
      }
      if (double(slow_its) < opt.hold * double(common - 1)) continue;
      const double b = common::median(base);
      std::vector<size_t> named;
      for (size_t i : mine)
        if (mean_own(own[i], common) >= opt.slow_ratio * b && blame_ms[i] >= opt.min_blame * run_ms) named.push_back(i);
      if (named.size() >= 2) out.insert(out.end(), named.begin(), named.end());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace collectives
