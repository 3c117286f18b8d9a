#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <utility>

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

void hint_huge_pages(const void* p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  const uintptr_t from = (uintptr_t(p) + kHuge - 1) & ~(kHuge - 1), to = (uintptr_t(p) + bytes) & ~(kHuge - 1);
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);  // a hint: errors ignored
}

namespace {

// Stable LSD radix sort of `a` by key(a[i]) (`bits` wide): digits of at most 13 bits, so a pass's
// 8,192 counters stay in L1 and 37-bit keys (a 2-minute capture) take 3 passes.
template <class T, class Key>
void radix_sort(std::vector<T>& a, int bits, Key key) {
  if (bits == 0 || a.size() < 2) return;
  const int passes = (bits + 12) / 13, digit = (bits + passes - 1) / passes;
  const size_t buckets = size_t(1) << digit;
  std::vector<uint32_t> count(buckets * size_t(passes), 0);
  for (const T& x : a) {
    const uint64_t k = key(x);
    for (int p = 0; p < passes; ++p) ++count[size_t(p) * buckets + ((k >> (p * digit)) & (buckets - 1))];
  }
  std::vector<T> b;
  reserve_big(b, a.size());
  b.resize(a.size());
  for (int p = 0; p < passes; ++p) {
    uint32_t* c = &count[size_t(p) * buckets];
    if (std::find(c, c + buckets, uint32_t(a.size())) != c + buckets) continue;  // one digit for all
    uint32_t sum = 0;
    for (size_t d = 0; d < buckets; ++d) sum += std::exchange(c[d], sum);
    for (const T& x : a) b[c[(key(x) >> (p * digit)) & (buckets - 1)]++] = x;
    a.swap(b);
  }
}

// Row indices from rows sorted by start (key = start - min): rows that start together go by end.
template <class T, class Key, class Index>
std::vector<uint32_t> indices(const std::vector<T>& a, Key key, Index index, const std::vector<int64_t>& end) {
  std::vector<uint32_t> idx;
  reserve_big(idx, a.size());
  idx.resize(a.size());
  for (size_t i = 0; i < a.size();) {
    size_t j = i + 1;
    while (j < a.size() && key(a[j]) == key(a[i])) ++j;
    for (size_t x = i; x < j; ++x) idx[x] = index(a[x]);
    if (j - i > 1)  // rare, short runs
      std::stable_sort(idx.begin() + long(i), idx.begin() + long(j), [&](uint32_t u, uint32_t v) { return end[u] < end[v]; });
    i = j;
  }
  return idx;
}

}  // namespace

std::vector<uint32_t> order_by_start(const std::vector<int64_t>& start, const std::vector<int64_t>& end) {
  const size_t n = start.size();
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i)
    sorted = start[i - 1] < start[i] || (start[i - 1] == start[i] && end[i - 1] <= end[i]);
  if (sorted) return {};
  const auto [lo_it, hi_it] = std::minmax_element(start.begin(), start.end());
  const uint64_t lo = uint64_t(*lo_it), span = uint64_t(*hi_it) - lo;  // modular: exact for any pair
  const int key_bits = std::bit_width(span), index_bits = std::bit_width(uint64_t(n));
  if (key_bits + index_bits <= 64) {  // the usual case: key and row index packed in one word
    std::vector<uint64_t> a;
    reserve_big(a, n);
    for (size_t i = 0; i < n; ++i) a.push_back((uint64_t(start[i]) - lo) << index_bits | i);
    auto key = [&](uint64_t v) { return v >> index_bits; };
    radix_sort(a, key_bits, key);
    const uint64_t mask = (uint64_t(1) << index_bits) - 1;
    return indices(a, key, [&](uint64_t v) { return uint32_t(v & mask); }, end);
  }
  struct Row {
    uint64_t key;
    uint32_t index;
  };
  std::vector<Row> a(n);
  for (size_t i = 0; i < n; ++i) a[i] = {uint64_t(start[i]) - lo, uint32_t(i)};
  auto key = [](const Row& r) { return r.key; };
  radix_sort(a, key_bits, key);
  return indices(a, key, [](const Row& r) { return r.index; }, end);
}

void sort_timeline(RankTimeline& tl) {
  auto& k = tl.kernels;
  if (auto idx = order_by_start(k.start, k.end); !idx.empty()) {
    permute(k.start, idx), permute(k.end, idx), permute(k.stream, idx), permute(k.name, idx);
    permute(k.launch, idx), permute(k.launch_tid, idx), permute(k.launch_dur, idx);
    permute(k.meta_call, idx), permute(k.meta_bytes, idx), permute(k.meta_comm, idx);  // when present
    permute(k.nccl_api, idx), permute(k.is_nccl, idx);  // annotations, when present
    permute(k.nccl_bytes, idx), permute(k.nccl_comm, idx);
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
    permute(n.start, idx), permute(n.end, idx), permute(n.name, idx), permute(n.domain, idx), permute(n.tid, idx);
    permute(n.nccl_domain, idx);
    permute(n.payload_bytes, idx), permute(n.payload_comm, idx), permute(n.payload_peer, idx);  // when present
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
