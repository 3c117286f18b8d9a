// Puts a freshly read RankTimeline in canonical form: every column group sorted by start (ties by
// end), and the capture window set. Readers call it last; analyses rely on it.
#pragma once
#include <cstdint>
#include <vector>

#include "ranks/timeline.hpp"

namespace ranks {
void sort_timeline(RankTimeline& tl);

// Row order by (start, end), ties in file order; empty when already sorted (the common case).
// Times must keep the contract (timeline.hpp). A radix sort: exports come in no row order, and a
// comparison sort of 1M indices was the largest cost of reading a shuffled export.
std::vector<uint32_t> order_by_start(const std::vector<int64_t>& start, const std::vector<int64_t>& end);

template <class T>
void permute(std::vector<T>& v, const std::vector<uint32_t>& idx) {
  if (idx.empty() || v.empty()) return;
  std::vector<T> out(v.size());
  for (size_t i = 0; i < idx.size(); ++i) out[i] = v[idx[i]];
  v.swap(out);
}
}  // namespace ranks
