// Which of a shared p2p stream's kernels belong to one link. The export does not say: a rank's
// pipeline stream carries its exchanges with both neighbours, and a grouped kernel
// (ncclGroupStart/End around several ncclSend/ncclRecv, as batch_isend_irecv issues) may hold
// exchanges with both. What NCCL promises decides it: each send has one receiver, and an exchange
// completes once both sides' kernels run (NCCL's p2p semantics: a send blocks until the matching
// receive is posted), the transfer time after the later of the two starts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "collectives/communicators.hpp"
#include "collectives/replay.hpp"
#include "ranks/sat_math.hpp"

namespace collectives {
namespace {

using ranks::diff_d;
using ranks::sat_sub;

// Whether the op after the last one of a stream serving two links belongs to this link: the
// stream repeats its pattern of links every iteration (one launch thread, the same schedule), so
// it is the link of the op one period back. The period: the smallest that repeats the pattern
// over the whole stream (to 1%). False when none does.
bool next_on_link(const std::vector<uint8_t>& on_link) {
  const size_t n = on_link.size();
  for (size_t p = 1; p * 3 <= n; ++p) {
    size_t bad = 0;
    for (size_t i = p; i < n; ++i) bad += on_link[i] != on_link[i - p];
    if (bad * 100 <= n - p) return on_link[n - p] != 0;
  }
  return false;
}

// The two ops of one exchange as seen on b's clock (a's shifted by the link's offset).
struct Shifted {
  const std::vector<CollectiveOp>& a;
  const std::vector<CollectiveOp>& b;
  int64_t off;
  int64_t a_start(uint32_t i) const { return sat_sub(a[i].start, off); }
  int64_t a_end(uint32_t i) const { return sat_sub(a[i].end, off); }
  // From the later start (both posted) to the earlier end: the exchange, if these are one.
  double exchange(uint32_t i, uint32_t j) const { return diff_d(std::min(a_end(i), b[j].end), std::max(a_start(i), b[j].start)); }
};

// An op's place in its rank's schedule: its iteration and its index among the stream's ops of
// that iteration.
struct Place {
  int32_t it = -1;
  uint32_t k = 0;
};
std::vector<Place> places(const std::vector<CollectiveOp>& ops) {
  std::vector<Place> p(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    p[i] = {ops[i].iteration, i > 0 && ops[i].iteration == ops[i - 1].iteration ? p[i - 1].k + 1 : 0};
  return p;
}

// Pairs the ops left over whose places pair on this link in the other iterations. One launch
// thread issues a rank's schedule in the same order every step, so an exchange of this link at
// one place in a step is at that place in every step; where its ends did not coincide, one side
// was a grouped kernel (batch_isend_irecv) that went on with its exchange with the stream's other
// neighbour, and ended later. A grouped kernel that waits for a slow neighbour on one side ends
// long after its exchange with the other, so matching by ends loses that exchange, and the wait of
// the receiver on the other side with it: the receiver's wait then looks like its own work.
// (A short op of the other link can lie inside a long wait of this one by chance: lying inside
// is no evidence.)
std::vector<std::pair<uint32_t, uint32_t>> pair_by_place(const Shifted& s, const std::vector<std::pair<uint32_t, uint32_t>>& pairs,
                                                         int64_t tolerance_ns) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  const auto pa = places(s.a), pb = places(s.b);
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, uint32_t> seen;  // (k in a, k in b, it b - it a) -> steps
  std::set<int32_t> steps;
  for (const auto& [i, j] : pairs)
    if (pa[i].it >= 0 && pb[j].it >= 0) ++seen[{pa[i].k, pb[j].k, pb[j].it - pa[i].it}], steps.insert(pa[i].it);
  // A place's partner: the one it paired with in most steps, at least two and a fifth of them,
  // and the partner's likewise.
  std::map<uint32_t, std::pair<uint32_t, std::tuple<uint32_t, uint32_t, int32_t>>> best_a, best_b;
  for (const auto& [key, n] : seen) {
    auto& x = best_a[std::get<0>(key)];
    if (n > x.first) x = {n, key};
    auto& y = best_b[std::get<1>(key)];
    if (n > y.first) y = {n, key};
  }
  const uint32_t least = std::max<uint32_t>(2, uint32_t(steps.size() / 5));
  std::map<std::pair<int32_t, uint32_t>, uint32_t> at_b;
  for (uint32_t j = 0; j < pb.size(); ++j) at_b[{pb[j].it, pb[j].k}] = j;
  std::vector<uint8_t> used_a(s.a.size(), 0), used_b(s.b.size(), 0);
  for (const auto& [i, j] : pairs) used_a[i] = used_b[j] = 1;
  for (uint32_t i = 0; i < pa.size(); ++i) {
    if (used_a[i] || pa[i].it < 0) continue;
    const auto x = best_a.find(pa[i].k);
    if (x == best_a.end() || x->second.first < least || best_b[std::get<1>(x->second.second)].second != x->second.second) continue;
    const auto y = at_b.find({pa[i].it + std::get<2>(x->second.second), std::get<1>(x->second.second)});
    if (y == at_b.end() || used_b[y->second]) continue;
    const uint32_t j = y->second;
    // Both kernels ran when the exchange did: it ended after the later start.
    if (s.exchange(i, j) < -double(tolerance_ns)) continue;
    out.push_back({i, j}), used_b[j] = 1;
  }
  return out;
}

using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Pairs, between consecutive pairs so far, a leftover op that waited for a leftover op of the
// other side: it started first and ended the link's exchange time after the other started (the
// end-matched exchanges' median, within 4 sigma by MAD plus the tolerance), while the other ran on.
// A receive posted early ends when its sender's kernel started plus the transfer: that ties the
// two. An op that did not wait ends its own transfer after its own start wherever it lies, which
// ties it to nothing. Where every step's exchange is grouped (no place pairs in any step), this
// is the only evidence.
Pairs pair_waited(const Shifted& s, const Pairs& matched, Pairs taken, int64_t tolerance_ns) {
  Pairs out;
  if (matched.size() < 4) return out;
  std::vector<double> d;
  for (const auto& [i, j] : matched) d.push_back(s.exchange(i, j));
  const double med = median_of(d), tol = double(tolerance_ns);
  for (auto& x : d) x = std::abs(x - med);
  const double width = 4 * 1.4826 * median_of(d) + tol;
  // x (start, end) waited for y (start, end): all on b's clock.
  const auto waited = [&](int64_t xs, int64_t xe, int64_t ys, int64_t ye) {
    return diff_d(xe, ye) < -tol && diff_d(xs, ys) < -tol && std::abs(diff_d(xe, ys) - med) <= width;
  };
  std::sort(taken.begin(), taken.end());
  const auto na = uint32_t(s.a.size()), nb = uint32_t(s.b.size());
  uint32_t ai = 0, bi = 0, j0 = 0;
  for (size_t k = 0; k <= taken.size(); ++k) {
    const uint32_t a_to = k < taken.size() ? taken[k].first : na, b_to = k < taken.size() ? taken[k].second : nb;
    uint32_t b_from = bi;
    for (uint32_t i = ai; i < a_to && b_from < b_to; ++i) {
      j0 = std::max(j0, b_from);  // b's ops that ended before a's started: starts only grow along a
      while (j0 < b_to && diff_d(s.b[j0].end, s.a_start(i)) < -tol) ++j0;
      for (uint32_t j = j0; j < b_to && diff_d(s.b[j].start, s.a_end(i)) <= tol; ++j)
        if (waited(s.a_start(i), s.a_end(i), s.b[j].start, s.b[j].end) || waited(s.b[j].start, s.b[j].end, s.a_start(i), s.a_end(i))) {
          out.push_back({i, j}), b_from = j + 1;
          break;
        }
    }
    if (k < taken.size()) ai = taken[k].first + 1, bi = taken[k].second + 1, j0 = bi;
  }
  return out;
}

// Drops the pairs of `extra` that cross a pair of `pairs` (both in issue order on their streams):
// a pairing out of order is no exchange.
void keep_order(const Pairs& pairs, Pairs& extra) {
  Pairs ordered(pairs);
  std::sort(ordered.begin(), ordered.end());
  std::erase_if(extra, [&](const std::pair<uint32_t, uint32_t>& g) {
    const auto it = std::lower_bound(ordered.begin(), ordered.end(), g);
    return (it != ordered.end() && it->second < g.second) || (it != ordered.begin() && std::prev(it)->second > g.second);
  });
}

// The later-ending op of a grouped pair ends, on this link, when the exchange did.
void mark_grouped(std::vector<MemberOps>& m, const Shifted& s, const std::vector<std::pair<uint32_t, uint32_t>>& grouped) {
  for (const auto& [i, j] : grouped) {
    auto &x = m[0].ops[i], &y = m[1].ops[j];
    if (s.a_end(i) > y.end) x.end = std::max(x.start, y.end + s.off);
    else y.end = std::max(y.start, s.a_end(i));
    x.grouped_exchange = y.grouped_exchange = true;
  }
}

}  // namespace

void keep_link_ops(std::vector<MemberOps>& m, int64_t offset_ns, int64_t tolerance_ns) {
  if (m.size() != 2) return;
  std::vector<int64_t> ea, eb;
  for (const auto& op : m[0].ops) ea.push_back(op.end);
  for (const auto& op : m[1].ops) eb.push_back(op.end);
  auto pairs = match_link_ops(ea, eb, offset_ns, tolerance_ns);
  const Shifted shifted{m[0].ops, m[1].ops, offset_ns};
  auto grouped = pair_by_place(shifted, pairs, tolerance_ns);
  keep_order(pairs, grouped);
  Pairs taken(pairs);
  taken.insert(taken.end(), grouped.begin(), grouped.end());
  auto waited = pair_waited(shifted, pairs, taken, tolerance_ns);
  keep_order(taken, waited);
  grouped.insert(grouped.end(), waited.begin(), waited.end());
  mark_grouped(m, shifted, grouped);
  pairs.insert(pairs.end(), grouped.begin(), grouped.end());
  std::sort(pairs.begin(), pairs.end());
  for (int side = 0; side < 2; ++side) {
    auto& mem = m[size_t(side)];
    if (pairs.size() == mem.ops.size()) continue;
    std::vector<uint8_t> on_link(mem.ops.size(), 0);
    std::vector<CollectiveOp> kept;
    for (const auto& p : pairs) {
      const uint32_t i = side == 0 ? p.first : p.second;
      kept.push_back(mem.ops[i]), on_link[i] = 1;
    }
    for (uint32_t k = 0; k < kept.size(); ++k) kept[k].seq = k;
    mem.ops = std::move(kept);
    if (mem.pending_next && !next_on_link(on_link)) mem.pending_next = false, mem.pending_launch = 0;
  }
}

}  // namespace collectives
