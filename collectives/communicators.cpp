#include "collectives/communicators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "common/groups.hpp"
#include "ranks/histogram.hpp"
#include "ranks/sat_math.hpp"
#include "candidate_pairs.hpp"
#include "p2p_links.hpp"
#include "topology/infer_layout.hpp"

namespace collectives {
namespace {

using ranks::abs_diff;
using ranks::diff_d;
using common::median;
using ranks::sat_abs;
using ranks::sat_from_wide;
using ranks::sat_trunc;
using ranks::sat_sub;

// |(a1 - b1) - (a0 - b0)|: the op-to-op change of a difference of wall clocks, exact in 128 bits
// (ends of untrusted profiles may lie anywhere in int64), saturated.
int64_t change_of_difference(int64_t a1, int64_t b1, int64_t a0, int64_t b0) {
  const __int128 d = (__int128(a1) - b1) - (__int128(a0) - b0);
  return sat_from_wide(d < 0 ? -d : d);
}


// The q-quantile of v (v is reordered).
int64_t quantile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

// Whether lockstep_score(a, b) > limit is certain from its first term alone: the 90th percentile
// of the op-to-op change of the difference exceeds `limit` when enough changes do. One pass, no
// allocation: most pairs of a large job are distinct groups, and a score above the coherence limit
// is only ever compared with it, so its exact value is never needed (4096 ranks: 16x faster).
bool exceeds_coherence(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t limit) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 3) return false;
  const size_t m = n - 1, k = std::min(m - 1, size_t(0.9 * double(m - 1) + 0.5));  // quantile()'s index
  size_t above = 0;
  for (size_t i = 1; i < n; ++i) above += change_of_difference(a[i], b[i], a[i - 1], b[i - 1]) > limit;
  return above >= m - k;  // the m - k largest changes, the quantile's among them, all exceed it
}

// Collective streams of one family (same leading type sequence): candidate communicators.
// Scores are kept only for pairs within the coherence limit, the only ones ever compared with
// anything but that limit: memory grows with the streams, not their square (a family holds one
// stream per rank: a dense matrix was 134 MB at 4096 ranks).
struct Family {
  struct Near {
    uint32_t other = 0;
    int64_t score = 0;
    bool on = false;  // a lock-step edge
  };
  std::vector<const StreamSummary*> s;
  std::vector<std::vector<Near>> near;  // per stream, sorted by `other`
  const Near* find(size_t i, size_t j) const {
    auto it = std::lower_bound(near[i].begin(), near[i].end(), j, [](const Near& x, size_t k) { return x.other < k; });
    return it != near[i].end() && it->other == j ? &*it : nullptr;
  }
};

// The lock-step score of streams i and j of a family when they may be members of one
// communicator: score under the limit; on one host, also ending at the same time (one clock).
std::optional<int64_t> near_score(const Family& f, size_t i, size_t j, const CommunicatorOptions& opt) {
  if (f.s[i]->rank == f.s[j]->rank) return std::nullopt;
  // Members end their first op together, up to the hosts' clock error (ops pair by position,
  // so they must start at the same op): further apart, no need to score.
  const auto &ea = f.s[i]->first_ends, &eb = f.s[j]->first_ends;
  if (!ea.empty() && !eb.empty() && abs_diff(ea.front(), eb.front()) > opt.max_clock_error_ns) return std::nullopt;
  if (exceeds_coherence(ea, eb, opt.coherence_ns)) return std::nullopt;
  const int64_t sc = lockstep_score(ea, eb);
  if (sc > opt.coherence_ns) return std::nullopt;
  if (f.s[i]->clock_domain != 0 && f.s[i]->clock_domain == f.s[j]->clock_domain) {
    std::vector<int64_t> d;
    for (size_t k = 0; k < std::min(ea.size(), eb.size()); ++k) d.push_back(sat_sub(ea[k], eb[k]));
    if (!d.empty() && sat_abs(quantile(d, 0.5)) > opt.same_host_ns) return std::nullopt;
  }
  return sc;
}

struct Scored {
  uint32_t i, j;
  int64_t score;
};

// Near pairs among `pairs` (i < j): each process scores its share, everyone gets them all.
std::vector<Scored> score_pairs(const Family& f, const std::vector<std::pair<uint32_t, uint32_t>>& pairs,
                                const CommunicatorOptions& opt, const WorkSplit& split) {
  std::vector<Scored> mine;
  for (size_t k = 0; k < pairs.size(); ++k)
    if (split.mine(k))
      if (const auto sc = near_score(f, pairs[k].first, pairs[k].second, opt)) mine.push_back({pairs[k].first, pairs[k].second, *sc});
  return split.gather(mine);
}

// The near pairs of a family. A small one: every pair. In a large one, candidate pairs
// (candidate_pairs.hpp) give each stream its best partner (members of one collective end
// together: a member's best partner is in its bucket), hence which candidate pairs are lock-step
// edges; every pair within each component of those edges is scored as in a small family. Clusters
// only ever join across an edge, so pairs of different components (distinct groups near the
// limit: their number grows with the square of the job) need no score. A stream with no candidate
// within the limit is compared with the others in turn until one is. The scoring is split over
// the processes.
std::vector<Scored> near_pairs(const Family& f, const CommunicatorOptions& opt, const WorkSplit& split) {
  const size_t n = f.s.size();
  std::vector<Scored> out;
  if (n <= opt.exact_family_streams) {
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = i + 1; j < n; ++j)
        if (const auto sc = near_score(f, i, j, opt)) out.push_back({i, j, *sc});
    return out;
  }
  std::vector<const std::vector<int64_t>*> ends;
  for (const auto* s : f.s) ends.push_back(&s->first_ends);
  std::vector<Scored> found = score_pairs(f, candidate_pairs(ends, opt.coherence_ns, opt.candidate_neighbours), opt, split);
  std::vector<int64_t> best(n, INT64_MAX);
  for (const auto& p : found) best[p.i] = std::min(best[p.i], p.score), best[p.j] = std::min(best[p.j], p.score);
  for (uint32_t i = 0; i < n; ++i)  // the same on every process: `found` is everyone's
    for (uint32_t j = 0; j < n && best[i] == INT64_MAX; ++j)
      if (const auto sc = j != i ? near_score(f, std::min(i, j), std::max(i, j), opt) : std::nullopt) {
        found.push_back({std::min(i, j), std::max(i, j), *sc});
        best[i] = std::min(best[i], *sc), best[j] = std::min(best[j], *sc);
      }
  common::IndexGroups edges(n);
  for (const auto& p : found)
    if (p.score <= std::max(opt.floor_ns, opt.partner_factor * std::max(best[p.i], best[p.j]))) edges.join(p.i, p.j);
  std::vector<std::vector<uint32_t>> comps(n);
  for (uint32_t i = 0; i < n; ++i) comps[edges.find(i)].push_back(i);  // ascending within each
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (const auto& c : comps)
    for (size_t a = 0; a < c.size(); ++a)
      for (size_t b = a + 1; b < c.size(); ++b) pairs.push_back({c[a], c[b]});
  return score_pairs(f, pairs, opt, split);
}

// Pairs that move in lock step: near (near_score) and within 3x of the better of the two
// streams' best partners (never rejecting below the noise floor).
void score_family(Family& f, const CommunicatorOptions& opt, const WorkSplit& split) {
  const size_t n = f.s.size();
  f.near.assign(n, {});
  std::vector<int64_t> best(n, INT64_MAX);  // over pairs within the limit: the same wherever it matters
  for (const auto& p : near_pairs(f, opt, split)) {
    f.near[p.i].push_back({p.j, p.score, false}), f.near[p.j].push_back({p.i, p.score, false});
    best[p.i] = std::min(best[p.i], p.score), best[p.j] = std::min(best[p.j], p.score);
  }
  for (size_t i = 0; i < n; ++i) {
    std::sort(f.near[i].begin(), f.near[i].end(), [](const auto& x, const auto& y) { return x.other < y.other; });
    for (auto& p : f.near[i]) p.on = p.score <= std::max(opt.floor_ns, opt.partner_factor * std::max(best[i], best[p.other]));
  }
}

// Complete linkage: two clusters join only when no rank is in both, every cross pair is within
// the coherence limit and nearly all are lock-step edges. Single linkage would chain distinct
// groups through one lucky pair.
std::vector<std::vector<size_t>> cluster(const Family& f, const CommunicatorOptions& opt, size_t max_members) {
  struct Cand {
    int64_t score;
    size_t i, j;
  };
  std::vector<Cand> cands;
  for (size_t i = 0; i < f.s.size(); ++i)
    for (const auto& p : f.near[i])
      if (p.other > i && p.on) cands.push_back({p.score, i, p.other});
  std::sort(cands.begin(), cands.end(), [](auto& x, auto& y) { return std::tie(x.score, x.i, x.j) < std::tie(y.score, y.i, y.j); });
  std::vector<size_t> of(f.s.size());
  std::iota(of.begin(), of.end(), 0);
  std::vector<std::vector<size_t>> members(f.s.size());
  for (size_t i = 0; i < f.s.size(); ++i) members[i] = {i};
  for (const auto& c : cands) {
    const size_t a = of[c.i], b = of[c.j];
    if (a == b || members[a].size() + members[b].size() > max_members) continue;
    size_t pairs = 0, good = 0;
    bool ok = true;
    for (size_t x : members[a])
      for (size_t y : members[b]) {
        ++pairs;
        const auto* p = f.find(x, y);
        ok = ok && f.s[x]->rank != f.s[y]->rank && p;
        good += p && p->on;
      }
    if (!ok || int64_t(good) * 100 < int64_t(pairs) * opt.cluster_edge_percent) continue;
    for (size_t y : members[b]) of[y] = a;
    members[a].insert(members[a].end(), members[b].begin(), members[b].end());
    members[b].clear();
  }
  std::vector<std::vector<size_t>> out;
  for (auto& m : members)
    if (m.size() >= 2) out.push_back(std::move(m));
  return out;
}

// Layout rule: groups of different kinds share at most one rank. A group holding two members of
// one group H of another family is two lock-stepped groups the data could not tell apart: split
// it by each member's position in its H-family group.
void split_by_orthogonality(std::vector<Communicator>& comms) {
  for (bool changed = true; changed;) {
    changed = false;
    std::map<int32_t, std::map<uint64_t, int>> position;  // rank -> family -> index in its group
    for (const auto& c : comms) {
      if (c.p2p) continue;
      for (size_t m = 0; m < c.members.size(); ++m) position[c.members[m].rank][c.shape] = int(m);
    }
    for (size_t gi = 0; gi < comms.size() && !changed; ++gi) {
      const auto& g = comms[gi];
      if (g.p2p || g.members.size() < 3) continue;
      for (const auto& h : comms) {
        if (h.p2p || h.shape == g.shape || h.members.size() >= g.members.size()) continue;
        size_t shared = 0;
        for (const auto& m : g.members)
          for (const auto& x : h.members) shared += m.rank == x.rank;
        if (shared < 2) continue;
        std::map<int, std::vector<Member>> parts;
        bool all = true;
        for (const auto& m : g.members) {
          auto it = position[m.rank].find(h.shape);
          if (it == position[m.rank].end()) all = false;
          else parts[it->second].push_back(m);
        }
        if (!all || parts.size() < 2) continue;
        if (std::any_of(parts.begin(), parts.end(), [](auto& p) { return p.second.size() < 2; })) continue;
        Communicator base = g;
        comms.erase(comms.begin() + long(gi));
        for (auto& [pos, ms] : parts) {
          Communicator c = base;
          c.members = ms, c.by_layout_rule = true;
          comms.push_back(std::move(c));
        }
        changed = true;
        break;
      }
    }
  }
}

bool is_p2p(const StreamSummary& s) { return s.first_type == CollectiveType::SendRecv; }

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

// Names from the layout; disagreements are noted.
void name_by_layout(std::vector<Communicator>& comms, LayoutFinding& lf) {
  const auto& l = *lf.layout;
  size_t explained = 0;
  std::vector<std::string> odd;
  for (auto& c : comms) {
    std::vector<int> ranks;
    for (const auto& m : c.members) ranks.push_back(m.rank);
    topology::CommunicatorGroup g;
    if (!topology::layout_explains(l, ranks, c.p2p, &g)) {
      if (odd.size() < 5) odd.push_back(fmt::format("{}", fmt::join(ranks, ",")));
      continue;
    }
    ++explained;
    c.id.kind = g.kind, c.id.index = g.index;
    if (c.p2p) c.id.from_stage = l.pp_rank(ranks[0]), c.id.to_stage = l.pp_rank(ranks[1]);
    c.name = c.p2p ? fmt::format("{}:{}-{}", g.name(), c.id.from_stage, c.id.to_stage) : g.name();
  }
  lf.consistency = comms.empty() ? 0 : double(explained) / double(comms.size());
  if (explained < comms.size())
    lf.notes.push_back(fmt::format("{} of {} communicators are not groups of layout {} (e.g. ranks [{}])",
                                   comms.size() - explained, comms.size(), l.to_string(), fmt::join(odd, "], [")));
}

}  // namespace

int64_t lockstep_score(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 3) return 0;  // too few ops to tell: the family decides
  // Scratch on the stack for a fingerprint's length (inference scores millions of pairs at 16k
  // ranks: allocations were half the time), on the heap beyond.
  constexpr size_t kStack = 4 * StreamSummary::kFingerprint;
  std::array<int64_t, kStack> stack;
  std::vector<int64_t> heap;
  int64_t* buf = stack.data();
  if (4 * n > kStack) heap.resize(4 * n), buf = heap.data();
  auto q = [](int64_t* v, size_t len, double at) {  // quantile() on a span (reordered)
    const size_t k = std::min(len - 1, size_t(at * double(len - 1) + 0.5));
    std::nth_element(v, v + k, v + len);
    return v[k];
  };
  // 90th percentile of the op-to-op change of the difference: members stay within noise at every
  // op, distinct groups wander at iteration boundaries even when ops within a burst line up.
  int64_t* d = buf;
  for (size_t i = 1; i < n; ++i) d[i - 1] = change_of_difference(a[i], b[i], a[i - 1], b[i - 1]);
  const int64_t step = q(d, n - 1, 0.9);
  // Spread of the difference around a line (drift): catches slow wander that each step hides.
  int64_t *x = buf + n, *half = buf + 2 * n, *r = buf + 3 * n;
  for (size_t i = 0; i < n; ++i) x[i] = sat_sub(a[i], b[i]);
  std::copy(x, x + n / 2, half);
  const int64_t first = q(half, n / 2, 0.5);
  std::copy(x + (n - n / 2), x + n, half);
  const int64_t second = q(half, n / 2, 0.5);
  const double t1 = diff_d(b[n / 4], b[0]), t2 = diff_d(b[n - 1 - n / 4], b[0]);
  const double slope = t2 > t1 ? diff_d(second, first) / (t2 - t1) : 0.0;
  for (size_t i = 0; i < n; ++i) r[i] = sat_sub(x[i], sat_trunc(slope * diff_d(b[i], b[0])));
  const int64_t mid = q(r, n, 0.5);
  for (size_t i = 0; i < n; ++i) r[i] = abs_diff(r[i], mid);
  const int64_t spread = sat_trunc(1.4826 * double(q(r, n, 0.5)));
  return std::max(step, spread);
}

bool coherent(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t limit_ns) {
  return lockstep_score(a, b) <= limit_ns;
}

std::vector<std::pair<uint32_t, uint32_t>> match_link_ops(const std::vector<int64_t>& end_a, const std::vector<int64_t>& end_b,
                                                          int64_t offset_ns, int64_t tolerance_ns) {
  // Walk both in end order (one stream's kernels end in issue order, but be safe).
  auto order = [](const std::vector<int64_t>& e) {
    std::vector<uint32_t> o(e.size());
    std::iota(o.begin(), o.end(), 0u);
    std::stable_sort(o.begin(), o.end(), [&](uint32_t x, uint32_t y) { return e[x] < e[y]; });
    return o;
  };
  const auto oa = order(end_a), ob = order(end_b);
  std::vector<std::pair<uint32_t, uint32_t>> out;
  int64_t off = offset_ns;
  size_t j = 0;
  for (uint32_t i : oa) {
    const int64_t want = sat_sub(end_a[i], off);  // where the peer's op should end on b's clock
    while (j < ob.size() && end_b[ob[j]] < sat_sub(want, tolerance_ns)) ++j;
    // the closest of the candidates within tolerance
    while (j + 1 < ob.size() && abs_diff(end_b[ob[j + 1]], want) < abs_diff(end_b[ob[j]], want)) ++j;
    if (j < ob.size() && abs_diff(end_b[ob[j]], want) <= tolerance_ns) {
      const __int128 d = __int128(end_a[i]) - end_b[ob[j]];
      off = sat_from_wide(off + (d - off) / 4);  // follow slow drift
      out.push_back({i, ob[j]});
      ++j;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Collective streams by family (same leading type sequence: TP and DP all-reduces share one, lock
// step parts them); p2p streams apart.
std::map<uint64_t, Family> families_of(const std::vector<StreamSummary>& streams, std::vector<const StreamSummary*>& p2p) {
  std::map<uint64_t, Family> families;
  for (const auto& s : streams) {
    if (s.ops == 0) continue;
    if (is_p2p(s)) p2p.push_back(&s);
    else families[s.type_prefix_hash].s.push_back(&s);
  }
  return families;
}

// One communicator of `members` (streams of the family `hash`).
Communicator make_group(uint64_t hash, const std::vector<const StreamSummary*>& members) {
  Communicator g;
  std::vector<uint32_t> rate;
  g.type = members.front()->first_type;
  for (const StreamSummary* s : members) {
    g.members.push_back({s->rank, s->stream, s->ops});
    rate.push_back(s->ops_per_iteration);
  }
  std::sort(rate.begin(), rate.end());
  // Comparable communicators: same type sequence, rate and size.
  g.family = mix(mix(hash, rate[rate.size() / 2]), g.members.size());
  g.shape = mix(hash, g.members.size());
  return g;
}

// Streams that carry NCCL's communicator id (its commHash, the same on every member: NCCL's
// NVTX payload) are grouped by it exactly when each member has one stream with the id and all
// share their leading types (the replay pairs members' ops by position: a member whose capture
// began an op later would pair the wrong ops); the rest stay in their family for lock-step
// clustering.
void take_identified(std::map<uint64_t, Family>& families, std::vector<Communicator>& comms) {
  std::map<uint64_t, std::vector<const StreamSummary*>> by_id;
  for (const auto& [hash, fam] : families)
    for (const StreamSummary* s : fam.s)
      if (s->comm_id) by_id[s->comm_id].push_back(s);
  std::set<const StreamSummary*> taken;
  for (auto& [id, members] : by_id) {
    std::set<int32_t> ranks;
    std::set<uint64_t> leading;
    for (const StreamSummary* s : members) ranks.insert(s->rank), leading.insert(s->type_prefix_hash);
    if (ranks.size() != members.size() || members.size() < 2 || leading.size() != 1) continue;  // infer
    std::sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
    comms.push_back(make_group(members.front()->type_prefix_hash, members));
    taken.insert(members.begin(), members.end());
  }
  if (taken.empty()) return;
  for (auto& [hash, fam] : families) std::erase_if(fam.s, [&](const StreamSummary* s) { return taken.count(s) > 0; });
}

// Collective communicators: those NCCL names, then the lock-step clusters of each family.
std::vector<Communicator> collective_groups(std::map<uint64_t, Family>& families, const CommunicatorOptions& opt,
                                            const WorkSplit& split) {
  std::vector<Communicator> comms;
  take_identified(families, comms);
  for (auto& [hash, fam] : families) {
    if (fam.s.empty()) continue;
    score_family(fam, opt, split);
    for (const auto& idx : cluster(fam, opt, SIZE_MAX)) {
      std::vector<const StreamSummary*> members;
      for (size_t m : idx) members.push_back(fam.s[m]);
      comms.push_back(make_group(hash, members));
    }
  }
  for (auto& c : comms)
    std::sort(c.members.begin(), c.members.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  return comms;
}

// Groups the data could not tell apart, split by the layout rule (and said so).
void apply_layout_rule(std::vector<Communicator>& comms, LayoutFinding& lf) {
  split_by_orthogonality(comms);
  size_t by_rule = 0;
  for (auto& c : comms) {
    std::sort(c.members.begin(), c.members.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
    if (c.by_layout_rule) c.family = mix(c.family, c.members.size()), ++by_rule;
  }
  if (by_rule)
    lf.notes.push_back(fmt::format(
        "{} communicators were split by the layout rule (groups of different kinds share at most one rank): "
        "their members ran in lock step, so the data alone could not tell them apart",
        by_rule));
}

// Layout: given, or inferred from who talks to whom.
void find_layout(const std::vector<StreamSummary>& streams, const std::vector<Communicator>& comms,
                 const std::optional<topology::ParallelLayout>& given, LayoutFinding& lf) {
  if (given) {
    lf.layout = given, lf.source = "given";
    return;
  }
  std::vector<topology::ObservedGroup> obs;
  std::set<int> present;
  for (const auto& s : streams) present.insert(s.rank);
  for (const auto& c : comms) {
    topology::ObservedGroup o;
    for (const auto& m : c.members) o.ranks.push_back(m.rank), o.ops += double(m.ops) / double(c.members.size());
    o.p2p = c.p2p;
    obs.push_back(std::move(o));
  }
  if (auto guess = topology::infer_layout(obs, std::vector<int>(present.begin(), present.end()))) {
    lf.layout = guess->layout, lf.source = "inferred";
    lf.how = "inferred from " + guess->how;
  }
}

// p2p links come from coinciding end times; the few that fit no pipeline of a layout that
// explains nearly all the others are chance coincidences: dropped, and said so.
void drop_chance_links(std::vector<Communicator>& comms, LayoutFinding& lf, const CommunicatorOptions& opt) {
  const auto& l = *lf.layout;
  auto fits = [&](const Communicator& c) { return topology::layout_explains(l, {c.members[0].rank, c.members[1].rank}, true); };
  size_t links = 0, odd = 0;
  for (const auto& c : comms) {
    if (!c.p2p) continue;
    ++links;
    odd += !fits(c);
  }
  if (odd == 0 || int64_t(odd) * 100 > int64_t(links) * opt.chance_link_percent) return;
  comms.erase(std::remove_if(comms.begin(), comms.end(), [&](const Communicator& c) { return c.p2p && !fits(c); }),
              comms.end());
  lf.notes.push_back(fmt::format("{} of {} p2p links fit no pipeline of layout {} and were dropped (chance "
                                 "coincidences of end times)", odd, links, l.to_string()));
}

}  // namespace

CommunicatorInference infer_communicators(std::vector<StreamSummary> streams, const std::optional<topology::ParallelLayout>& given,
                                          const CommunicatorOptions& opt, const WorkSplit& split) {
  std::sort(streams.begin(), streams.end(),
            [](auto& a, auto& b) { return std::tie(a.rank, a.stream) < std::tie(b.rank, b.stream); });
  CommunicatorInference res;
  std::vector<const StreamSummary*> p2p;
  auto families = families_of(streams, p2p);
  auto& comms = res.comms;
  comms = collective_groups(families, opt, split);
  apply_layout_rule(comms, res.layout);
  // p2p: pairs of streams whose ops coincide (each send has one receiver), op by op.
  for (auto& l : p2p_links(p2p, std::vector<Communicator>(comms), opt, split)) {
    l.family = mix(0x9e3779b97f4a7c15ull, 2);
    comms.push_back(std::move(l));
  }
  std::sort(comms.begin(), comms.end(), [](auto& a, auto& b) {
    return std::make_tuple(a.members.front().rank, a.members.front().stream, a.members.back().rank) <
           std::make_tuple(b.members.front().rank, b.members.front().stream, b.members.back().rank);
  });
  find_layout(streams, comms, given, res.layout);
  if (res.layout.layout) {
    // Completed first: links the data missed leave their chance stand-ins (a lock-stepped TP peer
    // of the true neighbour) a larger share of the links than they are.
    if (const size_t dropped = complete_links(p2p, *res.layout.layout, comms, opt))
      res.layout.notes.push_back(fmt::format("{} p2p links from a pipeline's last stage to its first were dropped: found in at "
                                             "most half of the pipelines, a chance coincidence of end times, not interleaving",
                                             dropped));
    drop_chance_links(comms, res.layout, opt);
    mark_shared_links(comms);
    name_by_layout(comms, res.layout);
  }
  for (size_t i = 0; i < comms.size(); ++i)
    if (comms[i].name.empty()) comms[i].name = "comm-" + std::to_string(i), comms[i].id.index = int32_t(i);
  return res;
}

}  // namespace collectives
