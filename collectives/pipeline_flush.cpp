// One rank's pipeline flushes (pipeline_flush.hpp: what it relies on).
#include "collectives/pipeline_flush.hpp"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "common/stats.hpp"
#include "ranks/intervals.hpp"
#include "ranks/sat_math.hpp"

namespace collectives {
namespace {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;
enum Kind : uint8_t { kCompute, kP2p, kOtherNccl };

// Time covered by merged intervals up to t, with prefix sums: O(log n) per query.
class Cumulative {
 public:
  explicit Cumulative(Intervals iv) : iv_(std::move(iv)) {
    double sum = 0;
    for (auto [a, b] : iv_) before_.push_back(sum), sum += double(b - a);
  }
  double at(int64_t t) const {
    auto it = std::upper_bound(iv_.begin(), iv_.end(), std::make_pair(t, INT64_MAX));
    if (it == iv_.begin()) return 0;
    const size_t i = size_t(it - iv_.begin()) - 1;
    return before_[i] + double(std::min(t, iv_[i].second) - iv_[i].first);
  }
  double between(int64_t a, int64_t b) const { return b > a ? at(b) - at(a) : 0; }

 private:
  Intervals iv_;
  std::vector<double> before_;
};

struct Rank {
  const ranks::KernelColumns& k;
  std::vector<uint8_t> kind;  // per kernel
  std::vector<int64_t> cs;    // compute kernel starts (own clock), sorted
  std::vector<uint32_t> cname;  // their names, in the same order
  // Where the host launched a kernel: (the launch call's start, the kernel's start), or (its start,
  // its start) where launches give no order (launches_order).
  using Key = std::pair<int64_t, int64_t>;
  std::vector<Key> ckey;        // per compute kernel (launch: its start where unknown), made non-decreasing
  // p2p kernels in the order the host launched them (key: the launch, else the start), and
  // their starts sorted (to count them in a span of GPU time).
  std::vector<int64_t> p2p_start, p2p_end, p2p_starts_sorted;
  std::vector<Key> p2p_key;
  int64_t compute_between(int64_t a, int64_t b) const {
    return std::lower_bound(cs.begin(), cs.end(), b) - std::lower_bound(cs.begin(), cs.end(), a);
  }
  // Compute kernels the host launched before p2p op j: where the op sits in the program. A p2p
  // kernel on its own stream may start while the next forward already runs (it waits only for
  // what was launched before it), so kernel starts do not place it; the launch calls' order on
  // the host does (CUPTI runtime records, the kernels' correlation ids).
  size_t before_op(size_t j) const { return size_t(std::lower_bound(ckey.begin(), ckey.end(), p2p_key[j]) - ckey.begin()); }
  int64_t launched_between(size_t j, size_t j2) const {  // 0 where two p2p streams swap their order
    return std::max<int64_t>(0, int64_t(before_op(j2)) - int64_t(before_op(j)));
  }
  // Merged intervals of compute kernels, of non-p2p NCCL kernels on `streams`, and of p2p kernels
  // when `with_p2p`.
  Intervals work(const std::vector<int32_t>& streams, bool with_p2p) const {
    Intervals out;
    ranks::union_of(
        k.start, k.end,
        [&](size_t i) {
          return kind[i] == kCompute || (with_p2p && kind[i] == kP2p) ||
                 (kind[i] == kOtherNccl && std::find(streams.begin(), streams.end(), k.stream[i]) != streams.end());
        },
        [&](int64_t s, int64_t e) { out.push_back({s, e}); });
    return out;
  }
};

// p2p ops per flush: the median count over complete steady iterations.
int flush_length(const Rank& r, const std::vector<ranks::Iteration>& its) {
  std::vector<int64_t> counts;
  const auto& s = r.p2p_starts_sorted;
  for (size_t i = 0; i + 1 < its.size(); ++i)
    if (!its[i].warmup)
      counts.push_back(std::lower_bound(s.begin(), s.end(), its[i + 1].start) - std::lower_bound(s.begin(), s.end(), its[i].start));
  return int(common::median(counts));
}

// The flush boundary as the first stage sees it: the position modulo K whose preceding interval
// holds the most compute kernels (last backward, optimizer, first forward), then the longest gap.
size_t flush_phase(const Rank& r, int K) {
  std::vector<std::vector<int64_t>> counts(static_cast<size_t>(K)), gaps(static_cast<size_t>(K));
  int64_t hi = r.p2p_end[0];
  for (size_t j = 1; j < r.p2p_start.size(); ++j) {
    counts[j % size_t(K)].push_back(r.launched_between(j - 1, j));
    gaps[j % size_t(K)].push_back(r.p2p_start[j] - hi);
    hi = std::max(hi, r.p2p_end[j]);
  }
  size_t best = 0;
  std::pair<int64_t, int64_t> best_key{INT64_MIN, INT64_MIN};
  for (size_t p = 0; p < counts.size(); ++p) {
    if (counts[p].empty()) continue;
    const std::pair<int64_t, int64_t> key{common::median(counts[p]), common::median(gaps[p])};
    if (key > best_key) best = p, best_key = key;
  }
  return best;
}

// Non-p2p NCCL streams with ops in more than half of the intervals between p2p ops holding compute.
std::vector<int32_t> microbatch_streams(const Rank& r) {
  std::vector<std::pair<int32_t, int64_t>> votes;
  int64_t intervals = 0;
  size_t i = 0;
  for (size_t j = 0; j + 1 < r.p2p_starts_sorted.size(); ++j) {
    const int64_t a = r.p2p_starts_sorted[j], b = r.p2p_starts_sorted[j + 1];
    if (r.compute_between(a, b) == 0) continue;
    ++intervals;
    std::vector<int32_t> seen;
    i = size_t(std::lower_bound(r.k.start.begin(), r.k.start.end(), a) - r.k.start.begin());
    for (; i < r.k.size() && r.k.start[i] < b; ++i)
      if (r.kind[i] == kOtherNccl && std::find(seen.begin(), seen.end(), r.k.stream[i]) == seen.end())
        seen.push_back(r.k.stream[i]);
    for (int32_t s : seen) {
      auto it = std::find_if(votes.begin(), votes.end(), [&](auto& v) { return v.first == s; });
      if (it == votes.end()) votes.push_back({s, 1});
      else ++it->second;
    }
  }
  std::vector<int32_t> out;
  for (auto [s, n] : votes)
    if (2 * n > intervals) out.push_back(s);
  return out;
}

// Forwards stage 0 runs before it first waits for a gradient: the compute kernels from the fill
// start to the longest idle gap between them (the wait for the first backward's gradient; GPipe
// after all m forwards, 1F1B after p), over the kernels of one forward. Where p2p kernels sit
// does not matter (receives may be posted early).
int32_t leading_forwards(const Rank& r, const FlushWindow& f) {
  const auto lo = std::lower_bound(r.k.start.begin(), r.k.start.end(), f.fill_start) - r.k.start.begin();
  int64_t hi = INT64_MIN, best = -1, n = 0, at = 0;
  for (size_t i = size_t(lo); i < r.k.size() && r.k.start[i] < f.drain_end; ++i) {
    if (r.kind[i] != kCompute) continue;
    if (hi != INT64_MIN && r.k.start[i] - hi > best) best = r.k.start[i] - hi, at = n;
    hi = std::max(hi, r.k.end[i]);
    ++n;
  }
  return f.fwd_kernels > 0 ? int32_t(std::lround(double(at) / f.fwd_kernels)) : 0;
}

// Chunk forwards in a flush: every forward of a model chunk launches the first forward's kernels,
// so a name the first forward launches c times and the flush launches N times counts N / c
// forwards when only forwards launch it (layernorm or attention forward), N / c / v when only one
// chunk's forwards do (the embedding), more when backwards launch it too (GEMMs). The count
// nearest to compute kernels over those of one forward and one backward (extra kernels of the
// first forward, the loss or the optimizer blur that ratio by a kernel or two), among counts at
// least two names agree on, and within 40% of that ratio; 0 when none is.
int32_t forwards_by_name(const Rank& r, size_t i0, size_t fwd, size_t j1, double by_count) {
  std::vector<std::pair<uint32_t, int64_t>> in_first, in_flush;
  auto bump = [](std::vector<std::pair<uint32_t, int64_t>>& v, uint32_t name) {
    auto it = std::find_if(v.begin(), v.end(), [&](auto& x) { return x.first == name; });
    if (it == v.end()) v.push_back({name, 1});
    else ++it->second;
  };
  for (size_t i = i0; i < i0 + fwd && i < r.cname.size(); ++i) bump(in_first, r.cname[i]);
  for (auto& [name, c] : in_first) in_flush.push_back({name, 0});
  for (size_t i = i0; i < j1 && i < r.cname.size(); ++i) {
    auto it = std::find_if(in_flush.begin(), in_flush.end(), [&](auto& x) { return x.first == r.cname[i]; });
    if (it != in_flush.end()) ++it->second;
  }
  std::vector<int64_t> counts;
  for (size_t x = 0; x < in_first.size(); ++x)
    if (in_flush[x].second % in_first[x].second == 0) counts.push_back(in_flush[x].second / in_first[x].second);
  int32_t best = 0;
  for (int64_t c : counts)
    if (c > 0 && std::count(counts.begin(), counts.end(), c) >= 2 &&
        (best == 0 || std::abs(double(c) - by_count) < std::abs(double(best) - by_count)))
      best = int32_t(c);
  // Recomputation launches the forward's kernels again in the backward: twice the forwards. The
  // names only settle what the count leaves between two integers.
  return std::abs(double(best) - by_count) <= 0.4 * by_count ? best : 0;
}

// The first forward's first compute kernel (an index into r.cs): up to fwd_kernels compute
// kernels before the first p2p op, back as far as they launch forward kernels (the names of the
// first interval between p2p ops that holds compute): a receive posted early sits before part of
// the forward, and the optimizer's kernels before it are not the forward's. Such a receive may
// start mid-forward (the compute stream runs behind the host's launches; nothing promises where
// a p2p kernel lands among the compute): then the kernel just before it launches no name of that
// interval (the rest of a forward), the next interval's names (the next forward, whole) say how
// far back the forward began, and the first forward's count takes that part in.
long fill_start(const Rank& r, size_t b, const std::vector<int64_t>& counts, FlushWindow& f) {
  const size_t at = r.before_op(b);
  auto names_of = [&](size_t k, std::vector<uint32_t>& out) {  // interval k's compute names, added
    const size_t s0 = r.before_op(b + k);
    for (size_t i = s0; i < s0 + size_t(counts[k]) && i < r.cname.size(); ++i) out.push_back(r.cname[i]);
    std::sort(out.begin(), out.end());
  };
  auto back = [&](const std::vector<uint32_t>& names, long most) {
    long i0 = long(at);
    while (i0 > 0 && long(at) - i0 < most && std::binary_search(names.begin(), names.end(), r.cname[size_t(i0 - 1)])) --i0;
    return i0;
  };
  size_t k = 0;
  while (counts[k] == 0) ++k;
  std::vector<uint32_t> names;
  names_of(k, names);
  long i0 = back(names, f.fwd_kernels);
  size_t k2 = k + 1;
  while (k2 < counts.size() && counts[k2] == 0) ++k2;
  if (i0 == long(at) && k2 < counts.size()) {
    names_of(k2, names);
    i0 = back(names, long(counts[k2]));
    f.fwd_kernels += int32_t(long(at) - i0);
  }
  if (i0 == long(at)) i0 = long(at) - f.fwd_kernels;  // nothing of it before the first op
  return i0;
}

// One flush (ops [b, b + K)) as the first stage; false when it has no compute between its p2p
// ops or its first forward / last backward are not all in the capture.
bool measure_flush(const Rank& r, size_t b, int K, FlushWindow& f) {
  const size_t last = b + size_t(K) - 1;
  f.p2p_ops = K;
  std::vector<int64_t> counts;
  for (size_t j = b; j < last; ++j) counts.push_back(r.launched_between(j, j + 1));
  auto nz = [](int64_t c) { return c > 0; };
  const auto first = std::find_if(counts.begin(), counts.end(), nz);
  if (first == counts.end()) return false;
  f.fwd_kernels = int32_t(*first);
  // The last backward launches names the flush's later intervals launch (backwards, and forwards
  // where 1F1B runs both between two exchanges; a receive launched ahead leaves a forward in the
  // last interval), at most as many as the longest of them; the optimizer's names end it.
  std::vector<uint32_t> bwd_names;
  int64_t most = 0;
  auto take = [&](size_t k) {  // interval k's names and count
    const size_t s0 = r.before_op(b + k);
    for (size_t i = s0; i < s0 + size_t(counts[k]) && i < r.cname.size(); ++i) bwd_names.push_back(r.cname[i]);
    most = std::max(most, counts[k]);
  };
  const size_t k1 = size_t(first - counts.begin());
  for (size_t k = k1 + 1; k < counts.size(); ++k) take(k);
  if (most == 0) take(k1);  // no compute after the first forward's interval: its own
  std::sort(bwd_names.begin(), bwd_names.end());
  bwd_names.erase(std::unique(bwd_names.begin(), bwd_names.end()), bwd_names.end());
  f.bwd_kernels = int32_t(most);
  const long i0 = fill_start(r, b, counts, f);
  // The last backward needs the last gradient: the bwd_kernels compute kernels starting after
  // the last p2p op ends (a receive posted early ends when the gradient arrives).
  int64_t end = *std::max_element(r.p2p_end.begin() + long(b), r.p2p_end.begin() + long(last) + 1);
  const size_t j0 = size_t(std::lower_bound(r.cs.begin(), r.cs.end(), r.p2p_end[last]) - r.cs.begin());
  if (i0 < 0 || j0 >= r.cs.size()) return false;
  f.fill_start = r.cs[size_t(i0)];
  // The last backward is whole when a kernel of another name (the optimizer's) follows it, or it
  // has as many kernels as the longest interval: in the capture's last iteration fewer kernels
  // than that may follow the last p2p op, and the flush is still whole.
  size_t seen = 0;
  bool closed = false;
  auto it = std::lower_bound(r.k.start.begin(), r.k.start.end(), r.p2p_end[last]);
  for (size_t i = size_t(it - r.k.start.begin()); i < r.k.size() && !closed; ++i) {
    if (r.kind[i] != kCompute) continue;
    if (seen > 0 && !std::binary_search(bwd_names.begin(), bwd_names.end(), r.k.name[i])) {
      closed = true;  // the optimizer's kernel: the backward ended before it
    } else {
      end = std::max(end, r.k.end[i]), ++seen;
      closed = seen >= size_t(f.bwd_kernels);
    }
  }
  if (!closed) return false;
  f.bwd_kernels = int32_t(std::max<size_t>(seen, 1));
  f.drain_end = end;
  f.kernels = int32_t(r.compute_between(f.fill_start, f.drain_end));
  const size_t j1 = size_t(std::lower_bound(r.cs.begin(), r.cs.end(), f.drain_end) - r.cs.begin());
  f.forwards = forwards_by_name(r, size_t(i0), size_t(f.fwd_kernels), j1, double(f.kernels) / (f.fwd_kernels + f.bwd_kernels));
  f.leading_fwd = leading_forwards(r, f);
  return true;
}

void in_launch_order(Rank& r) {
  r.p2p_starts_sorted = r.p2p_start;
  std::vector<size_t> at(r.p2p_key.size());
  for (size_t i = 0; i < at.size(); ++i) at[i] = i;
  std::stable_sort(at.begin(), at.end(), [&](size_t a, size_t b) { return r.p2p_key[a] < r.p2p_key[b]; });
  auto permute = [&](auto& v) {
    std::remove_reference_t<decltype(v)> o(v.size());
    for (size_t i = 0; i < at.size(); ++i) o[i] = v[at[i]];
    v = std::move(o);
  };
  permute(r.p2p_start), permute(r.p2p_end), permute(r.p2p_key);
}

// Launch calls give program order when each kernel has its own: a CUDA graph launch starts many
// kernels with one call (two kernels in a row sharing it), and the p2p ops its nodes wait on
// are placed by the graph, not by when the host called it; nor do absent launch records (some
// profiler traces) give an order. Kernel starts are the order then.
bool launches_order(const ranks::KernelColumns& k) {
  if (k.launch.size() != k.size()) return false;
  size_t known = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    if (k.launch[i] == ranks::kNoTime) continue;
    ++known;
    if (i > 0 && k.launch[i] == k.launch[i - 1]) return false;
  }
  return known * 10 >= k.size() * 9;
}

}  // namespace

RankFlushes pipeline_flushes(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                             const std::vector<ranks::Iteration>& its) {
  const auto& k = tl.kernels;
  Rank r{k, std::vector<uint8_t>(k.size(), kCompute), {}, {}, {}, {}, {}, {}, {}};
  const bool launched = launches_order(k);
  for (size_t i = 0, o = 0; i < k.size(); ++i) {  // ops are the NCCL kernels in kernel order
    const Rank::Key key{launched && k.launch[i] != ranks::kNoTime ? k.launch[i] : k.start[i], k.start[i]};
    if (!k.is_nccl[i]) {
      r.cs.push_back(k.start[i]), r.cname.push_back(k.name[i]);
      r.ckey.push_back(r.ckey.empty() ? key : std::max(r.ckey.back(), key));
      continue;
    }
    const bool p2p = o < ops.size() && ops[o].type == CollectiveType::SendRecv;
    ++o;
    r.kind[i] = p2p ? kP2p : kOtherNccl;
    if (p2p) r.p2p_start.push_back(k.start[i]), r.p2p_end.push_back(k.end[i]), r.p2p_key.push_back(key);
  }
  in_launch_order(r);
  RankFlushes out;
  if (r.p2p_start.size() < 2) return out;
  const auto streams = microbatch_streams(r);
  const Cumulative work(r.work(streams, false)), all(r.work(streams, true));
  for (size_t j = 0; j < r.p2p_end.size(); ++j) {
    const int64_t e = r.p2p_end[j];
    const double w = work.at(e);
    out.marks.push_back({-1, ranks::sat_add(tl.utc_epoch_ns, e), w, all.at(e) - w});
  }
  std::sort(out.marks.begin(), out.marks.end(), [](const P2pMark& a, const P2pMark& b) { return a.end < b.end; });
  if (r.p2p_start.size() < 4 || its.size() < 3) return out;
  const int K = flush_length(r, its);
  if (K < 2 || r.p2p_start.size() < size_t(2 * K)) return out;
  for (size_t b = flush_phase(r, K); b + size_t(K) <= r.p2p_start.size(); b += size_t(K)) {
    FlushWindow f;
    if (!measure_flush(r, b, K, f)) continue;
    f.flush = int32_t(out.flushes.size());
    size_t it = 0;
    while (it < its.size() && its[it].start <= r.p2p_start[b]) ++it;
    f.iteration = int32_t(it) - 1;
    // In the capture's last iteration only when the flush ends inside it (a whole last iteration:
    // its range closed, or its unit's collectives all ended): its faults count like the others'.
    f.steady = it >= 1 && !its[it - 1].warmup && (it < its.size() || f.drain_end <= its[it - 1].end);
    f.work_ns = work.between(f.fill_start, f.drain_end);
    f.p2p_ns = all.between(f.fill_start, f.drain_end) - f.work_ns;
    f.fill_start = ranks::sat_add(tl.utc_epoch_ns, f.fill_start);
    f.drain_end = ranks::sat_add(tl.utc_epoch_ns, f.drain_end);
    out.flushes.push_back(f);
  }
  return out;
}

}  // namespace collectives
