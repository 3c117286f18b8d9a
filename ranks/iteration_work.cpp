#include "ranks/iteration_work.hpp"

#include <algorithm>
#include <unordered_map>

#include "ranks/intervals.hpp"
#include "ranks/sat_math.hpp"

namespace ranks {

namespace {

// Calls emit(cursor, a, b) for every stretch with an NCCL kernel running and no compute kernel, in
// time order.
template <class Emit>
void exposed_comm(const RankTimeline& tl, Emit emit) {
  const auto& k = tl.kernels;
  const auto compute = compute_intervals(k);
  size_t c = 0, cursor = 0;
  union_of(k.start, k.end, [&](size_t i) { return bool(k.is_nccl[i]); }, [&](int64_t s, int64_t e) {
    while (c < compute.size() && compute[c].second <= s) ++c;
    int64_t at = s;
    for (size_t q = c; q < compute.size() && compute[q].first < e; ++q) {
      if (compute[q].first > at) emit(cursor, at, compute[q].first);
      at = std::max(at, compute[q].second);
    }
    if (at < e) emit(cursor, at, e);
  });
}

}  // namespace

IterationWork iteration_work(const RankTimeline& tl, const std::vector<Iteration>& its, size_t top) {
  IterationWork w;
  const size_t n = its.size();
  w.compute_ns.assign(n, 0), w.kernels.assign(n, 0), w.idle_ns.assign(n, 0), w.comm_ns.assign(n, 0);
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
  // [h0, h1) into the iterations it spans; `from` only moves forward (holes come in order).
  auto credit = [&](std::vector<double>& into, size_t& from, int64_t h0, int64_t h1) {
    while (from < n && end_of(from) <= h0) ++from;
    for (size_t q = from; q < n && its[q].start < h1; ++q)
      into[q] += std::max(0.0, diff_d(std::min(h1, end_of(q)), std::max(h0, its[q].start)));
  };
  size_t j = 0;
  int64_t busy_until = its[0].start;
  for (size_t a = 0; a < k.size(); ++a) {  // kernels sorted by start (timeline.hpp)
    if (k.start[a] > busy_until) credit(w.idle_ns, j, busy_until, k.start[a]);
    busy_until = std::max(busy_until, k.end[a]);
  }
  credit(w.idle_ns, j, busy_until, end_of(n - 1));
  exposed_comm(tl, [&](size_t& from, int64_t a, int64_t b) { credit(w.comm_ns, from, a, b); });
  return w;
}

}  // namespace ranks
