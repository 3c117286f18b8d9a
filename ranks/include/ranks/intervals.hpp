// Interval unions over start-sorted columns, streamed: no copies of the events (metrics.hpp and
// findings.hpp both walk the GPU's busy intervals and the holes between them).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ranks/timeline.hpp"

namespace ranks {

// Emits the union of start-sorted intervals [start, end) of rows passing `keep` as merged intervals.
template <class Keep, class Emit>
void union_of(const std::vector<int64_t>& start, const std::vector<int64_t>& end, Keep keep, Emit emit) {
  bool open = false;
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < start.size(); ++i) {
    if (!keep(i)) continue;
    if (open && start[i] <= hi) {
      hi = std::max(hi, end[i]);
      continue;
    }
    if (open) emit(lo, hi);
    open = true, lo = start[i], hi = end[i];
  }
  if (open) emit(lo, hi);
}

// The merged intervals in which some compute (non-NCCL) kernel runs.
inline std::vector<std::pair<int64_t, int64_t>> compute_intervals(const KernelColumns& k) {
  std::vector<std::pair<int64_t, int64_t>> out;
  union_of(k.start, k.end, [&](size_t i) { return !k.is_nccl[i]; }, [&](int64_t s, int64_t e) { out.push_back({s, e}); });
  return out;
}

// Length of [a, b) covered by merged, start-sorted intervals.
inline double covered(const std::vector<std::pair<int64_t, int64_t>>& iv, int64_t a, int64_t b) {
  double c = 0;
  auto it = std::lower_bound(iv.begin(), iv.end(), std::make_pair(a, INT64_MIN));
  if (it != iv.begin()) --it;
  for (; it != iv.end() && it->first < b; ++it)
    c += std::max(0.0, double(std::min(it->second, b)) - double(std::max(it->first, a)));  // no int64 overflow
  return c;
}

// Union of all GPU activity: kernels and copies merged by start.
template <class Emit>
void activity_union(const RankTimeline& tl, Emit emit) {
  const auto& k = tl.kernels;
  const auto& c = tl.copies;
  size_t i = 0, j = 0;
  bool open = false;
  int64_t lo = 0, hi = 0;
  while (i < k.size() || j < c.size()) {
    int64_t s, e;
    if (j >= c.size() || (i < k.size() && k.start[i] <= c.start[j])) s = k.start[i], e = k.end[i], ++i;
    else s = c.start[j], e = c.end[j], ++j;
    if (open && s <= hi) {
      hi = std::max(hi, e);
      continue;
    }
    if (open) emit(lo, hi);
    open = true, lo = s, hi = e;
  }
  if (open) emit(lo, hi);
}

}  // namespace ranks
