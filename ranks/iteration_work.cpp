#include "ranks/iteration_work.hpp"

#include <algorithm>
#include <unordered_map>

#include "ranks/sat_math.hpp"

namespace ranks {

IterationWork iteration_work(const RankTimeline& tl, const std::vector<Iteration>& its, size_t top) {
  IterationWork w;
  const size_t n = its.size();
  w.compute_ns.assign(n, 0), w.kernels.assign(n, 0), w.idle_ns.assign(n, 0);
  if (n == 0) return w;
  const auto& k = tl.kernels;
  auto end_of = [&](size_t i) { return i + 1 < n ? its[i + 1].start : sat_add(its[i].start, its[i].step_ns); };
  // Top compute kernels of this rank by total time.
  std::unordered_map<uint32_t, int64_t> total;
  for (size_t i = 0; i < k.size(); ++i)
    if (!k.is_nccl[i]) {  // saturating: a sum over millions of kernels may pass int64
      auto& t = total[k.name[i]];
      t = sat_add(t, sat_sub(k.end[i], k.start[i]));
    }
  std::vector<std::pair<int64_t, uint32_t>> order;
  for (auto [name, t] : total) order.push_back({t, name});
  std::sort(order.begin(), order.end(), [&](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : tl.names.str(a.second) < tl.names.str(b.second);
  });
  if (order.size() > top) order.resize(top);
  std::unordered_map<uint32_t, size_t> slot;
  for (auto& [t, name] : order) {
    slot[name] = w.top_names.size();
    w.top_names.push_back(tl.names.str(name));
  }
  w.name_ns.assign(w.top_names.size(), std::vector<double>(n, 0));
  w.name_count = w.name_ns;
  // Kernels by the iteration they start in, and SM idle per iteration (see iteration_work.hpp).
  size_t it = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    while (it + 1 < n && k.start[i] >= its[it + 1].start) ++it;
    if (k.start[i] < its[0].start || k.start[i] >= end_of(n - 1) || k.is_nccl[i]) continue;
    const double d = diff_d(k.end[i], k.start[i]);
    w.compute_ns[it] += d, w.kernels[it] += 1;
    if (auto s = slot.find(k.name[i]); s != slot.end()) w.name_ns[s->second][it] += d, w.name_count[s->second][it] += 1;
  }
  size_t j = 0;
  auto credit = [&](int64_t h0, int64_t h1) {  // a hole with no kernel running
    while (j < n && end_of(j) <= h0) ++j;
    for (size_t q = j; q < n && its[q].start < h1; ++q)
      w.idle_ns[q] += std::max(0.0, diff_d(std::min(h1, end_of(q)), std::max(h0, its[q].start)));
  };
  int64_t busy_until = its[0].start;
  for (size_t a = 0; a < k.size(); ++a) {  // kernels sorted by start (timeline.hpp)
    if (k.start[a] > busy_until) credit(busy_until, k.start[a]);
    busy_until = std::max(busy_until, k.end[a]);
  }
  credit(busy_until, end_of(n - 1));
  return w;
}

}  // namespace ranks
