#include <algorithm>
#include <numeric>

#include "ranks/timeline.hpp"
#include "timeline_sort.hpp"

namespace ranks {

uint32_t StringTable::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  strings_.emplace_back(s);
  uint32_t id = uint32_t(strings_.size() - 1);
  index_.emplace(strings_.back(), id);
  return id;
}

namespace {

// Sort order of rows by (start, end); empty when already sorted (the common case).
std::vector<uint32_t> order_by_start(const std::vector<int64_t>& start, const std::vector<int64_t>& end) {
  bool sorted = true;
  for (size_t i = 1; i < start.size() && sorted; ++i)
    sorted = start[i - 1] < start[i] || (start[i - 1] == start[i] && end[i - 1] <= end[i]);
  if (sorted) return {};
  std::vector<uint32_t> idx(start.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    return start[a] < start[b] || (start[a] == start[b] && end[a] < end[b]);
  });
  return idx;
}

template <class T>
void permute(std::vector<T>& v, const std::vector<uint32_t>& idx) {
  if (idx.empty() || v.empty()) return;
  std::vector<T> out(v.size());
  for (size_t i = 0; i < idx.size(); ++i) out[i] = v[idx[i]];
  v.swap(out);
}

}  // namespace

void sort_timeline(RankTimeline& tl) {
  auto& k = tl.kernels;
  if (auto idx = order_by_start(k.start, k.end); !idx.empty()) {
    permute(k.start, idx), permute(k.end, idx), permute(k.stream, idx), permute(k.name, idx);
    permute(k.launch, idx), permute(k.nccl_api, idx), permute(k.is_nccl, idx);
  }
  auto& c = tl.copies;
  if (auto idx = order_by_start(c.start, c.end); !idx.empty()) {
    permute(c.start, idx), permute(c.end, idx), permute(c.bytes, idx), permute(c.stream, idx), permute(c.kind, idx);
  }
  auto& a = tl.api;
  if (auto idx = order_by_start(a.start, a.end); !idx.empty()) {
    permute(a.start, idx), permute(a.end, idx), permute(a.name, idx), permute(a.kind, idx);
  }
  auto& n = tl.nvtx;
  if (auto idx = order_by_start(n.start, n.end); !idx.empty()) {
    permute(n.start, idx), permute(n.end, idx), permute(n.name, idx), permute(n.nccl_domain, idx), permute(n.tid, idx);
  }
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  auto extent = [&](const std::vector<int64_t>& s, const std::vector<int64_t>& e) {
    if (s.empty()) return;
    lo = std::min(lo, s.front());
    hi = std::max(hi, *std::max_element(e.begin(), e.end()));
  };
  extent(k.start, k.end), extent(c.start, c.end), extent(a.start, a.end), extent(n.start, n.end);
  tl.capture_start = lo == INT64_MAX ? 0 : lo;
  tl.capture_end = hi == INT64_MIN ? 0 : hi;
}

}  // namespace ranks
