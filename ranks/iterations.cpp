// Training iterations of one rank: from NVTX markers, else from the period of the NCCL sequence.
#include "ranks/iterations.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ranks/metrics.hpp"
#include "ranks/sat_math.hpp"

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

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
// [ _#:]*\d+ to the end.
bool separators_then_digits(std::string_view s) {
  const size_t i = s.find_first_not_of(" _#:");
  return i != std::string_view::npos && all_digits(s.substr(i));
}
bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

// kDefaultIterationMarker without std::regex: ECMAScript `.` is any character but \n and \r.
bool default_iteration_marker(std::string_view s) {
  if (s.empty()) return false;
  if (starts(s, "ProfilerStep#")) return all_digits(s.substr(13));
  if ((s[0] == 'I' || s[0] == 'i') && starts(s.substr(1), "teration")) return separators_then_digits(s.substr(9));
  if ((s[0] == 'S' || s[0] == 's') && starts(s.substr(1), "tep")) return separators_then_digits(s.substr(4));
  if (starts(s, "train_step") || starts(s, "training_step")) return s.find_first_of("\n\r") == std::string_view::npos;
  return false;
}

bool IterationMarker::matches(std::string_view name) const {
  return user_ ? user_->search(name) : default_iteration_marker(name);
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

// The NCCL kernels' times (launch where known, else start), in order: what a step's collectives
// look like from the host that issued them.
std::vector<int64_t> collective_times(const KernelColumns& k) {
  std::vector<int64_t> t;
  for (size_t i = 0; i < k.size(); ++i)
    if (!k.is_nccl.empty() && k.is_nccl[i]) t.push_back(k.launch[i] != kNoTime ? k.launch[i] : k.start[i]);
  std::sort(t.begin(), t.end());
  return t;
}

// Iterations whose marker is missing (one ProfilerStep range lost on one rank, repro3
// K_missing_marker_hides_straggler) show as one marker spanning k iterations' collectives: with
// the same count c of collectives in most iterations, an iteration holding k x c of them, whose
// numbers skip by k (or, unnumbered, whose step is about k steps), is split where the missing
// units' first collectives sit relative to their markers in the complete iterations. Markers as
// read (ends not yet extended). Returns what it did ("" for nothing).
std::string split_merged(const RankTimeline& tl, std::vector<Iteration>& out, bool numbered) {
  if (out.size() < 3) return "";
  const auto t = collective_times(tl.kernels);
  auto first_at = [&](int64_t from) { return size_t(std::lower_bound(t.begin(), t.end(), from) - t.begin()); };
  std::vector<size_t> count(out.size() - 1);
  for (size_t i = 0; i + 1 < out.size(); ++i) count[i] = first_at(out[i + 1].start) - first_at(out[i].start);
  std::map<size_t, size_t> freq;
  for (size_t n : count) ++freq[n];
  const auto mode = std::max_element(freq.begin(), freq.end(), [](auto& a, auto& b) { return a.second < b.second; });
  if (mode == freq.end() || mode->first == 0 || mode->second < 2 || 2 * mode->second < count.size()) return "";
  const size_t c = mode->first;
  std::vector<int64_t> offset, step;  // first collective after the marker's start; the step, over complete iterations
  for (size_t i = 0; i < count.size(); ++i)
    if (count[i] == c) offset.push_back(t[first_at(out[i].start)] - out[i].start), step.push_back(out[i + 1].start - out[i].start);
  std::nth_element(offset.begin(), offset.begin() + long(offset.size() / 2), offset.end());
  std::nth_element(step.begin(), step.begin() + long(step.size() / 2), step.end());
  const int64_t off = offset[offset.size() / 2], unit = step[step.size() / 2];
  std::vector<Iteration> fixed;
  std::string said;
  for (size_t i = 0; i < out.size(); ++i) {
    fixed.push_back(out[i]);
    const size_t k = i + 1 < out.size() && count[i] % c == 0 ? count[i] / c : 0;
    if (k < 2) continue;
    const int64_t span = out[i + 1].start - out[i].start;
    const bool fits = numbered ? out[i + 1].number - out[i].number == int64_t(k)
                               : span > int64_t(double(unit) * (double(k) - 0.5)) && span < int64_t(double(unit) * (double(k) + 0.5));
    if (!fits) continue;
    const size_t first = first_at(out[i].start);
    for (size_t j = 1; j < k; ++j) {
      const int64_t at = std::max(fixed.back().start + 1, t[first + j * c] - off);
      if (at >= out[i + 1].start) break;
      fixed.back().end = std::min(fixed.back().end, at);
      Iteration it;
      it.number = out[i].number + int64_t(j);
      it.start = at, it.end = out[i + 1].start;
      fixed.push_back(it);
      said += (said.empty() ? "" : ", ") + std::to_string(it.number);
    }
  }
  if (said.empty()) return "";
  if (!numbered)
    for (size_t i = 0; i < fixed.size(); ++i) fixed[i].number = int64_t(i);
  out = std::move(fixed);
  return "no iteration marker for iteration" + std::string(said.find(',') == std::string::npos ? " " : "s ") + said +
         " (a marker lost between its neighbours): split from its collectives, " + std::to_string(c) +
         " per iteration";
}

std::vector<Iteration> from_markers(const RankTimeline& tl, const IterationMarker& marker, std::string* repaired) {
  const auto& n = tl.nvtx;
  std::unordered_map<uint32_t, bool> matches;
  std::map<uint32_t, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < n.size(); ++i) {
    auto [m, fresh] = matches.try_emplace(n.name[i], false);
    if (fresh) m->second = marker.matches(tl.names.str(n.name[i]));
    if (m->second) by_tid[n.tid[i]].push_back(i);
  }
  if (by_tid.empty()) return {};
  // The thread with the most markers drives the loop; keep its outermost markers only.
  const auto& rows = std::max_element(by_tid.begin(), by_tid.end(), [](auto& a, auto& b) {
                       return a.second.size() < b.second.size();
                     })->second;
  std::vector<Iteration> out;
  int64_t covered_until = INT64_MIN;
  bool numbered = true;
  for (size_t r : rows) {
    if (n.start[r] < covered_until) continue;  // nested inside the previous marker
    covered_until = n.end[r];
    Iteration it;
    it.number = first_integer(tl.names.str(n.name[r]), -1);
    if (it.number < 0) it.number = int64_t(out.size()), numbered = false;
    it.start = n.start[r];
    it.end = n.end[r];
    out.push_back(it);
  }
  *repaired = split_merged(tl, out, numbered);
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

// Timing score of period p (iterations.hpp) over a window of gaps: enough for 3 units, bounded so
// that a long run of one collective (every p a candidate) stays cheap. The window skips the first
// p gaps when 3 units remain after them: the first unit is warm-up (autotuning, torch.compile,
// module loading may stretch it by seconds) and would otherwise make a regular run look irregular.
double timing_score(const std::vector<int64_t>& gap, size_t p) {
  const size_t off = gap.size() >= 4 * p ? p : 0;
  const size_t m = std::min(gap.size() - p, 3 * p + 4096) - std::min(off, std::min(gap.size() - p, 3 * p + 4096));
  std::vector<std::pair<double, double>> terms;  // (|difference|, scale) per pair of gaps
  terms.reserve(m);
  for (size_t j = off; j < off + m && j + p < gap.size(); ++j)  // two gaps may sum past int64
    terms.push_back({std::abs(diff_d(gap[j + p], gap[j])), 0.5 * (double(gap[j + p]) + double(gap[j]))});
  // A host stall now and then (a GC pause every few steps) disturbs a few pairs of the true unit;
  // its multiple that lines the stalls up must not win for that: the largest kTrimShare of the
  // differences are left out (a sub-period differs in a large share of pairs, and stays high).
  const size_t drop = size_t(double(terms.size()) * kTrimShare);
  if (drop > 0)
    std::nth_element(terms.begin(), terms.end() - long(drop), terms.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  double diff = 0, scale = 0;
  for (size_t j = 0; j + drop < terms.size(); ++j) diff += terms[j].first, scale += terms[j].second;
  return scale > 0 ? diff / scale : 0.0;
}

// NCCL kernels in start order; ties (a send and a recv issued together on two streams) by stream
// and name, so that their order does not depend on their end times.
std::vector<size_t> nccl_rows(const KernelColumns& k, int32_t stream, bool all) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < k.size(); ++i)
    if (k.is_nccl[i] && (all || k.stream[i] == stream)) rows.push_back(i);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    return std::tie(k.start[a], k.stream[a], k.name[a]) < std::tie(k.start[b], k.stream[b], k.name[b]);
  });
  // In launch order where every launch is known: the host issues a step's collectives in program
  // order, while their start order across streams follows the GPU's timing (a gradient bucket on
  // the DP stream starts among the backward's TP all-reduces earlier or later as peers are late).
  if (std::all_of(rows.begin(), rows.end(), [&](size_t r) { return k.launch[r] != kNoTime; }))
    std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return k.launch[a] < k.launch[b]; });
  return rows;
}

CollectivePeriod period_of_rows(const KernelColumns& k, const std::vector<size_t>& rows) {
  std::vector<uint64_t> keys;
  std::vector<int64_t> starts;
  for (size_t r : rows) keys.push_back(uint64_t(k.name[r]) << 32 | uint32_t(k.stream[r])), starts.push_back(k.start[r]);
  return choose_collective_period(keys, starts);
}

}  // namespace

CollectivePeriod choose_collective_period(const std::vector<uint64_t>& keys, const std::vector<int64_t>& starts) {
  CollectivePeriod out;
  const size_t n = std::min(keys.size(), starts.size());
  out.name_period = find_period(keys);
  if (out.name_period == 0) return out;
  std::vector<int64_t> gap(n - 1);
  // Gaps between the times the sequence has reached each position (the running maximum of the
  // starts): in launch order a bucket that blocks on a late peer starts after collectives launched
  // behind it, and the raw +28 / -27 ms gap pairs around it, once per late bucket, would make a
  // step that a GC pause two steps apart disturbs score 0.5 at its own period (0.04 so).
  int64_t reached = n > 0 ? starts[0] : 0;
  for (size_t j = 0; j + 1 < n; ++j) {
    const int64_t next = std::max(reached, starts[j + 1]);
    gap[j] = sat_sub(next, reached);  // any starts, not only a timeline's
    reached = next;
  }
  // Candidates: multiples of the name period (another period would imply a smaller name period).
  std::vector<size_t> cand;
  std::vector<double> score;
  size_t work = 0;
  for (size_t p = out.name_period; p <= std::min<size_t>(n / 3, 8192) && work < 50'000'000; p += out.name_period) {
    cand.push_back(p), score.push_back(timing_score(gap, p));
    work += std::min(gap.size() - p, 3 * p + 4096);
  }
  // A sub-period of the true unit, or a period out of step with it, scores worse than the unit; the
  // unit and its multiples score alike: take the smallest that no larger candidate clearly beats.
  std::vector<double> best_after(cand.size() + 1, INFINITY);
  for (size_t i = cand.size(); i-- > 0;) best_after[i] = std::min(best_after[i + 1], score[i]);
  for (size_t i = 0; i < cand.size(); ++i) {
    if (score[i] <= kExactScore || score[i] <= kRegularScore || score[i] <= kSubPeriodRatio * best_after[i + 1]) {
      out.score = score[i];
      if (score[i] <= kIrregularScore) out.period = cand[i];
      return out;
    }
  }
  return out;
}

CollectivePeriod collective_period_of(const RankTimeline& tl, std::vector<size_t>* rows_out) {
  const auto& k = tl.kernels;
  auto rows = nccl_rows(k, 0, true);
  auto found = period_of_rows(k, rows);
  std::map<int32_t, size_t> per_stream;
  for (size_t r : rows) per_stream[k.stream[r]]++;
  if (found.period == 0 && per_stream.size() > 1) {
    // The interleaving across streams may vary from step to step: take one stream alone, the one
    // whose unit lasts longest (a TP stream may repeat every microbatch, the DP one every step).
    int64_t longest = 0;
    for (const auto& [s, n] : per_stream) {
      auto one = nccl_rows(k, s, false);
      auto alone = period_of_rows(k, one);
      if (alone.period == 0) continue;
      std::vector<int64_t> unit;
      for (size_t b = 0; b + alone.period < one.size(); b += alone.period)
        unit.push_back(k.start[one[b + alone.period]] - k.start[one[b]]);
      std::nth_element(unit.begin(), unit.begin() + unit.size() / 2, unit.end());
      if (unit[unit.size() / 2] > longest) longest = unit[unit.size() / 2], found = alone, rows = std::move(one);
    }
  }
  if (rows_out) *rows_out = std::move(rows);
  return found;
}

namespace {

// Units of the chosen period, each ending where its last collective ends (the latest end among its
// collectives): members of a collective finish together (NCCL completes it on every member when the
// last has arrived and the data moved), so the boundary is one moment on every member, and the
// unit the capture ends with is whole as soon as its collectives are. Anchored at the next unit's
// first start instead, the capture's last unit had no end: a fault in the capture's last iteration
// went unseen (sim3 stall, node and multi runs without step markers). The first unit runs from its
// first collective's start (warm-up, not a steady step); collectives after the last whole unit
// belong to one the capture cut off: no iteration.
std::vector<Iteration> from_collective_period(const RankTimeline& tl) {
  std::vector<size_t> rows;
  const size_t p = collective_period_of(tl, &rows).period;
  std::vector<Iteration> out;
  if (p == 0) return out;
  const auto& k = tl.kernels;
  int64_t reached = k.start[rows[0]];
  for (size_t b = 0; b + p <= rows.size(); b += p) {
    Iteration it;
    it.number = int64_t(out.size());
    it.start = reached;
    for (size_t j = b; j < b + p; ++j) reached = std::max(reached, k.end[rows[j]]);
    it.end = reached;
    it.step_ns = it.end - it.start;
    it.warmup = out.empty();
    out.push_back(it);
  }
  return out;
}

}  // namespace

std::vector<Iteration> find_iterations(const RankTimeline& tl, const IterationMarker& marker, IterationSource* source,
                                       std::vector<std::string>* warnings) {
  std::string repaired;
  auto out = from_markers(tl, marker, &repaired);
  *source = IterationSource::NvtxMarker;
  if (!out.empty()) {
    if (!repaired.empty() && warnings) warnings->push_back(repaired);
    fill_steps(out);
    return out;
  }
  out = from_collective_period(tl);
  *source = out.empty() ? IterationSource::None : IterationSource::CollectivePeriod;
  return out;
}

}  // namespace ranks
