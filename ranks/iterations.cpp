// Training iterations of one rank: from NVTX markers, else from the period of the NCCL sequence.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "ranks/metrics.hpp"

namespace ranks {

const char* iteration_source_name(IterationSource s) {
  switch (s) {
    case IterationSource::NvtxMarker: return "nvtx";
    case IterationSource::CollectivePeriod: return "collective_period";
    case IterationSource::None: return "none";
  }
  return "none";
}

namespace {

int64_t first_integer(const std::string& s, int64_t fallback) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] >= '0' && s[i] <= '9') {
      int64_t v = 0;
      for (size_t j = i; j < s.size() && s[j] >= '0' && s[j] <= '9' && v < (int64_t(1) << 50); ++j)
        v = v * 10 + (s[j] - '0');
      return v;
    }
  return fallback;
}

void fill_steps(std::vector<Iteration>& it) {
  for (size_t i = 0; i < it.size(); ++i) {
    it[i].step_ns = (i + 1 < it.size() ? it[i + 1].start : it[i].end) - it[i].start;
    it[i].warmup = i == 0;
  }
}

std::vector<Iteration> from_markers(const RankTimeline& tl, const std::regex& marker) {
  const auto& n = tl.nvtx;
  std::unordered_map<uint32_t, bool> matches;
  std::map<uint32_t, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < n.size(); ++i) {
    auto [m, fresh] = matches.try_emplace(n.name[i], false);
    if (fresh) m->second = std::regex_search(tl.names.str(n.name[i]), marker);
    if (m->second) by_tid[n.tid[i]].push_back(i);
  }
  if (by_tid.empty()) return {};
  // The thread with the most markers drives the loop; keep its outermost markers only.
  const auto& rows = std::max_element(by_tid.begin(), by_tid.end(), [](auto& a, auto& b) {
                       return a.second.size() < b.second.size();
                     })->second;
  std::vector<Iteration> out;
  int64_t covered_until = INT64_MIN;
  for (size_t r : rows) {
    if (n.start[r] < covered_until) continue;  // nested inside the previous marker
    covered_until = n.end[r];
    Iteration it;
    it.number = first_integer(tl.names.str(n.name[r]), int64_t(out.size()));
    it.start = n.start[r];
    it.end = n.end[r];
    out.push_back(it);
  }
  // Extend each iteration to the end of the GPU work launched inside its marker.
  const auto& k = tl.kernels;
  for (size_t i = 0; i < k.size(); ++i) {
    if (k.launch[i] == kNoTime) continue;
    auto it = std::upper_bound(out.begin(), out.end(), k.launch[i],
                               [](int64_t t, const Iteration& x) { return t < x.start; });
    if (it == out.begin()) continue;
    --it;
    if (k.launch[i] <= it->end) it->end = std::max(it->end, k.end[i]);
  }
  return out;
}

// Smallest period p (>= 3 repetitions) with at most 2% mismatches of seq[i] vs seq[i+p].
size_t find_period(const std::vector<uint64_t>& seq) {
  const size_t n = seq.size();
  for (size_t p = 1; p <= std::min<size_t>(n / 3, 8192); ++p) {
    const size_t budget = (n - p) / 50;
    size_t bad = 0;
    for (size_t i = 0; i + p < n && bad <= budget; ++i) bad += seq[i] != seq[i + p];
    if (bad <= budget) return p;
  }
  return 0;
}

std::vector<Iteration> from_collective_period(const RankTimeline& tl) {
  const auto& k = tl.kernels;
  std::vector<size_t> idx;
  std::unordered_map<int32_t, size_t> per_stream;
  for (size_t i = 0; i < k.size(); ++i)
    if (k.is_nccl[i]) idx.push_back(i), per_stream[k.stream[i]]++;
  auto attempt = [&](const std::vector<size_t>& rows) -> std::vector<Iteration> {
    std::vector<uint64_t> seq;
    for (size_t r : rows) seq.push_back(uint64_t(k.name[r]) << 32 | uint32_t(k.stream[r]));
    size_t p = find_period(seq);
    if (p == 0) return {};
    std::vector<Iteration> out;
    for (size_t b = 0; b + p <= rows.size(); b += p) {
      Iteration it;
      it.number = int64_t(out.size());
      it.start = k.start[rows[b]];
      it.end = k.end[rows[b + p - 1]];
      out.push_back(it);
    }
    return out;
  };
  auto out = attempt(idx);
  if (out.empty() && per_stream.size() > 1) {  // interleaving across streams may vary: try the busiest one
    int32_t s = std::max_element(per_stream.begin(), per_stream.end(),
                                 [](auto& a, auto& b) { return a.second < b.second; })->first;
    std::vector<size_t> one;
    for (size_t r : idx)
      if (k.stream[r] == s) one.push_back(r);
    out = attempt(one);
  }
  return out;
}

}  // namespace

std::vector<Iteration> find_iterations(const RankTimeline& tl, const std::regex& marker, IterationSource* source) {
  auto out = from_markers(tl, marker);
  *source = IterationSource::NvtxMarker;
  if (out.empty()) {
    out = from_collective_period(tl);
    *source = out.empty() ? IterationSource::None : IterationSource::CollectivePeriod;
  }
  fill_steps(out);
  return out;
}

}  // namespace ranks
