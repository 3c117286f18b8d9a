// Puts a freshly read RankTimeline in canonical form: every column group sorted by start (ties by
// end), and the capture window set. Readers call it last; analyses rely on it. Readers may leave a
// kernel's end as kNoTime (unknown) for it to repair; the time contract holds after it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ranks/timeline.hpp"

namespace ranks {
// Also repairs what a profile cannot mean: rows recorded twice are dropped, and a kernel whose end
// is unknown (kNoTime: a reader's mark for a missing, negative or non-number duration), before its
// start, or impossible (after `profiler_end`, the capture's end by the profile's own metadata
// where it has one, else longer than an hour and ten times the capture) gets the median duration
// of its name on this rank; each said in one warning. Returns why the timeline is unusable when
// more than half its kernels had no possible duration (its GPU time would be a guess: the reader
// refuses a file of one process, and marks one of several RankTimeline::unusable), else "". The
// timeline is sorted and keeps the time contract either way.
[[nodiscard]] std::string sort_timeline(RankTimeline& tl, int64_t profiler_end = kNoTime);

// Row order by (start, end), ties in file order; empty when already sorted (the common case).
// Times must keep the contract (timeline.hpp). A radix sort: exports come in no row order, and a
// comparison sort of 1M indices was the largest cost of reading a shuffled export.
std::vector<uint32_t> order_by_start(const std::vector<int64_t>& start, const std::vector<int64_t>& end);

// Asks for 2 MB pages for [p, p + bytes) where the kernel gives them on request (transparent huge
// pages in "madvise" mode; elsewhere nothing changes). Reading a 1M-kernel export otherwise takes
// ~35k page faults for its fresh columns, ~10% of its CPU time.
void hint_huge_pages(const void* p, size_t bytes);

// reserve(n), the storage hinted to huge pages before it is first touched.
template <class T>
void reserve_big(std::vector<T>& v, size_t n) {
  v.reserve(n);
  hint_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// v = v[idx[0]], v[idx[1]], ...; `scratch` (any content) is reused as the new storage and left
// holding the old one, so columns of one type share a single extra buffer.
template <class T>
void permute(std::vector<T>& v, const std::vector<uint32_t>& idx, std::vector<T>& scratch) {
  if (idx.empty() || v.empty()) return;
  reserve_big(scratch, v.size());
  scratch.resize(v.size());
  for (size_t i = 0; i < idx.size(); ++i) scratch[i] = v[idx[i]];
  v.swap(scratch);
}
template <class T>
void permute(std::vector<T>& v, const std::vector<uint32_t>& idx) {
  std::vector<T> scratch;
  permute(v, idx, scratch);
}
}  // namespace ranks
