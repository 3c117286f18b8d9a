#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/text.hpp"
#include "ranks/sat_math.hpp"
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

namespace {

int64_t ranks_sat_mul10(int64_t v) { return v > INT64_MAX / 10 ? INT64_MAX : v * 10; }

// The index of the next kernel (by start) on each kernel's stream; SIZE_MAX for a stream's last.
std::vector<size_t> next_on_stream(const KernelColumns& k) {
  std::vector<size_t> order(k.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return std::tie(k.stream[a], k.start[a], a) < std::tie(k.stream[b], k.start[b], b); });
  std::vector<size_t> next(k.size(), SIZE_MAX);
  for (size_t p = 0; p + 1 < order.size(); ++p)
    if (k.stream[order[p]] == k.stream[order[p + 1]]) next[order[p]] = order[p + 1];
  return next;
}

// The end given to kernel row i whose own end is impossible, `guess` its start plus its name's
// median; j the next kernel on its stream (SIZE_MAX: none). Kernels on one stream run one at a
// time (CUDA stream order): it ended before the next one started. An NCCL kernel ends with its
// peers, a wait no median of its name tells (9 ms against 0.2): when its successor was queued
// (launched before it could start) that start is its end; a compute kernel's successor may have
// waited on another stream, so its name's median stays (semantic fuzzer, seed 3611).
int64_t repaired_end(const RankTimeline& tl, size_t i, size_t j, int64_t guess) {
  const auto& k = tl.kernels;
  if (j == SIZE_MAX || k.start[j] < k.start[i]) return guess;
  const bool queued = j < k.launch.size() && k.launch[j] != kNoTime && k.launch[j] < k.start[j];
  return queued && is_nccl_kernel_name(tl.names.str(k.name[i])) ? k.start[j] : std::min(guess, k.start[j]);
}

// Keeps the first of rows equal in every column `same` compares, among rows of equal start and
// end (adjacent once sorted, ties in file order); `keep` then compacts every column. Returns the
// number dropped.
template <class Same, class Keep, class Merge>
size_t drop_duplicates(const std::vector<int64_t>& start, const std::vector<int64_t>& end, Same same, Keep keep,
                       Merge merge) {
  std::vector<uint8_t> drop;
  size_t dropped = 0;
  for (size_t i = 0; i < start.size();) {
    size_t j = i + 1;
    while (j < start.size() && start[j] == start[i] && end[j] == end[i]) ++j;
    for (size_t b = i + 1; b < j; ++b)  // runs of equal times are short: compare each pair
      for (size_t a = i; a < b; ++a)
        if ((drop.empty() || !drop[a]) && same(a, b)) {
          if (drop.empty()) drop.assign(start.size(), 0);
          drop[b] = 1, ++dropped, merge(a, b);
          break;
        }
    i = j;
  }
  if (dropped) keep(drop);
  return dropped;
}

template <class T>
void compact(std::vector<T>& v, const std::vector<uint8_t>& drop) {
  if (v.empty()) return;
  size_t o = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (!drop[i]) v[o++] = v[i];
  v.resize(o);
}

template <class T>
bool eq(const std::vector<T>& v, size_t a, size_t b) {
  return v.empty() || v[a] == v[b];
}

// Rows recorded twice (a trace merged or flushed twice, an export appended to itself): one
// stream runs one kernel or copy at a time (CUDA's stream semantics), so two rows of one stream,
// start, end and name are one activity; a thread makes one call or range at a time likewise.
// Kept, they would be work overlapping itself (repro3 K_duplicate_kernels). Said once per table.
void drop_duplicate_rows(RankTimeline& tl) {
  auto& k = tl.kernels;
  const size_t kernels = drop_duplicates(
      k.start, k.end,
      [&](size_t a, size_t b) { return k.stream[a] == k.stream[b] && k.name[a] == k.name[b] && eq(k.meta_comm, a, b); },
      [&](const std::vector<uint8_t>& d) {
        compact(k.start, d), compact(k.end, d), compact(k.stream, d), compact(k.name, d), compact(k.launch, d);
        compact(k.launch_tid, d), compact(k.launch_dur, d), compact(k.meta_call, d), compact(k.meta_bytes, d);
        compact(k.meta_comm, d), compact(k.nccl_api, d), compact(k.is_nccl, d), compact(k.nccl_bytes, d);
        compact(k.nccl_comm, d);
      },
      [&](size_t a, size_t b) {  // the launch is joined by correlation id: one of the two may lack it
        if (!k.launch.empty() && k.launch[a] == kNoTime)
          k.launch[a] = k.launch[b], k.launch_tid[a] = k.launch_tid[b], k.launch_dur[a] = k.launch_dur[b];
      });
  auto& c = tl.copies;
  const size_t copies = drop_duplicates(
      c.start, c.end,
      [&](size_t a, size_t b) { return c.stream[a] == c.stream[b] && c.bytes[a] == c.bytes[b] && c.kind[a] == c.kind[b]; },
      [&](const std::vector<uint8_t>& d) {
        compact(c.start, d), compact(c.end, d), compact(c.bytes, d), compact(c.stream, d), compact(c.kind, d);
      },
      [](size_t, size_t) {});
  auto& a = tl.api;
  const size_t calls = drop_duplicates(
      a.start, a.end, [&](size_t x, size_t y) { return a.name[x] == a.name[y] && a.kind[x] == a.kind[y]; },
      [&](const std::vector<uint8_t>& d) { compact(a.start, d), compact(a.end, d), compact(a.name, d), compact(a.kind, d); },
      [](size_t, size_t) {});
  auto& n = tl.nvtx;
  const size_t ranges = drop_duplicates(
      n.start, n.end,
      [&](size_t x, size_t y) {
        return n.name[x] == n.name[y] && n.domain[x] == n.domain[y] && n.tid[x] == n.tid[y] && eq(n.payload_comm, x, y);
      },
      [&](const std::vector<uint8_t>& d) {
        compact(n.start, d), compact(n.end, d), compact(n.name, d), compact(n.domain, d), compact(n.tid, d);
        compact(n.nccl_domain, d), compact(n.payload_bytes, d), compact(n.payload_comm, d), compact(n.payload_peer, d);
      },
      [](size_t, size_t) {});
  // Launch calls whose kernel never completed, sorted by (start, tid): a duplicate is adjacent.
  auto& u = tl.unmatched_launches;
  const size_t before = u.size();
  u.erase(std::unique(u.begin(), u.end(),
                      [](const auto& x, const auto& y) {
                        return x.start == y.start && x.end == y.end && x.tid == y.tid && x.call == y.call;
                      }),
          u.end());
  const size_t launches = before - u.size() + size_t(std::max<int64_t>(tl.duplicate_launches, 0));
  tl.launches_total -= int64_t(std::min<size_t>(before - u.size(), size_t(std::max<int64_t>(tl.launches_total, 0))));
  tl.duplicate_launches = 0;
  const std::pair<size_t, const char*> said[] = {
      {kernels, "kernel"}, {launches, "launch call"}, {copies, "memory copy"}, {calls, "CUDA API call"}, {ranges, "NVTX range"}};
  std::string list;
  size_t total = 0;
  for (const auto& [count, what] : said)
    if (count) list += (list.empty() ? "" : ", ") + std::to_string(count) + " " + what + (count == 1 ? "" : "s"), total += count;
  if (total)
    tl.warnings.push_back(std::to_string(total) + " duplicate rows dropped (" + list +
                          " with the same stream or thread, start, end and name as another: a trace merged or "
                          "exported twice?)");
}

// Kernel rows whose duration cannot be: unknown (kNoTime), negative, ending after the capture, or
// 0 for a kernel that runs 10 us and more.
// Given the median of their name's possible durations on this rank (0 when it has none): the
// rank's time stays near what it ran, where 0 ns would make it look idle and a year would make
// it look slow (repro3 K_bad_durations_silent).
std::string repair_kernel_ends(RankTimeline& tl, int64_t profiler_end) {
  auto& k = tl.kernels;
  if (k.size() == 0) return "";
  int64_t lo = INT64_MAX, hi = INT64_MIN;  // starts: a bad duration moves ends, never starts
  for (const auto* s : {&k.start, &tl.copies.start, &tl.api.start, &tl.nvtx.start})
    for (int64_t v : *s) lo = std::min(lo, v), hi = std::max(hi, v);
  const bool known = profiler_end != kNoTime && profiler_end >= hi;
  // Without the profiler's own end: longer than an hour and than ten captures of what started.
  const int64_t longest = std::max<int64_t>(int64_t(3600) * 1'000'000'000, ranks_sat_mul10(hi - lo));
  auto impossible = [&](size_t i) {
    return k.end[i] == kNoTime || k.end[i] < k.start[i] || (known ? k.end[i] > profiler_end : k.end[i] - k.start[i] > longest);
  };
  // One kernel may round to 0 us in a trace; most of them at 0 means durations were not recorded.
  size_t zero = 0;
  for (size_t i = 0; i < k.size(); ++i) zero += k.end[i] == k.start[i];
  const bool zero_unknown = 2 * zero > k.size();
  std::vector<size_t> bad, zeros;
  std::unordered_map<uint32_t, std::vector<int64_t>> durations;
  for (size_t i = 0; i < k.size(); ++i) {
    if (impossible(i) || (zero_unknown && k.end[i] == k.start[i])) bad.push_back(i);
    else if (k.end[i] == k.start[i]) zeros.push_back(i);
  }
  if (bad.empty() && zeros.empty()) return "";  // the common case: no median needed
  for (size_t i = 0; i < k.size(); ++i)
    if (k.end[i] != k.start[i] && !impossible(i)) durations[k.name[i]].push_back(k.end[i] - k.start[i]);
  for (auto& [name, d] : durations) std::nth_element(d.begin(), d.begin() + long(d.size() / 2), d.end());
  auto median_of = [&](uint32_t name) {
    auto it = durations.find(name);
    return it == durations.end() ? int64_t(0) : it->second[it->second.size() / 2];
  };
  // A trace's microseconds round a short kernel to 0; a kernel whose name runs 10 us and more
  // elsewhere on this rank did not: its duration was lost (semantic fuzzer: a trace's dur 0).
  for (size_t i : zeros)
    if (median_of(k.name[i]) >= 10'000) bad.push_back(i);
  if (bad.empty()) return "";
  // Repaired either way (the time contract holds for whoever reads it); most of them: unusable.
  const std::string unusable =
      bad.size() * 2 > k.size()
          ? std::to_string(bad.size()) + " of " + std::to_string(k.size()) +
                " kernel rows have no possible duration (missing, negative, not a number, past the end of the capture, "
                "or 0 for most): this rank's GPU time is unknown"
          : "";
  const auto next = next_on_stream(k);
  for (size_t i : bad) k.end[i] = repaired_end(tl, i, next[i], ranks::sat_add(k.start[i], median_of(k.name[i])));
  if (unusable.empty())
    tl.warnings.push_back(std::to_string(bad.size()) + " kernel row" + (bad.size() == 1 ? "" : "s") +
                          " with an impossible duration (missing, negative, not a number, past the end of the "
                          "capture, or 0 where the kernel runs 10 us and more): given the median duration of their "
                          "kernel's name on this rank");
  return unusable;
}

}  // namespace

std::string sort_timeline(RankTimeline& tl, int64_t profiler_end) {
  // First: the sort's ties go by end.
  const std::string unusable = repair_kernel_ends(tl, profiler_end);
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
  drop_duplicate_rows(tl);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  auto extent = [&](const std::vector<int64_t>& s, const std::vector<int64_t>& e) {
    if (s.empty()) return;
    lo = std::min(lo, s.front());
    hi = std::max(hi, *std::max_element(e.begin(), e.end()));
  };
  extent(k.start, k.end), extent(c.start, c.end), extent(a.start, a.end), extent(n.start, n.end);
  tl.capture_start = lo == INT64_MAX ? 0 : lo;
  tl.capture_end = hi == INT64_MIN ? 0 : hi;
  return unusable;
}

}  // namespace ranks
