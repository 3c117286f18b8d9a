#include "collectives/communicators.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include "ranks/histogram.hpp"

namespace collectives {
namespace {

using ranks::median;

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
};

// How far two streams' end times are from moving in lock step: the median absolute change, op to
// op, of their end-time difference. A constant clock offset and slow drift cancel out; members of
// one collective stay within microseconds, streams of different communicators wander by the
// jitter of the work between ops.
int64_t lockstep_score(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 3) return 0;  // too few ops to tell: the family decides
  std::vector<int64_t> d(n - 1);
  for (size_t i = 1; i < n; ++i) {
    const int64_t x = (a[i] - b[i]) - (a[i - 1] - b[i - 1]);
    d[i - 1] = x < 0 ? -x : x;
  }
  return median(d);
}

// Pairs of a family that move in lock step: score within 3x of the better of the two streams'
// best partners (at least 2 us, at most the coherence limit).
struct Edges {
  std::vector<std::vector<int64_t>> score;
  std::vector<std::vector<bool>> on;
  Edges(const std::vector<const StreamSummary*>& fam, int64_t limit) {
    const size_t n = fam.size();
    score.assign(n, std::vector<int64_t>(n, INT64_MAX));
    on.assign(n, std::vector<bool>(n, false));
    std::vector<int64_t> best(n, INT64_MAX);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        if (fam[i]->rank == fam[j]->rank) continue;
        score[i][j] = score[j][i] = lockstep_score(fam[i]->first_ends, fam[j]->first_ends);
        best[i] = std::min(best[i], score[i][j]), best[j] = std::min(best[j], score[i][j]);
      }
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (score[i][j] != INT64_MAX)
          on[i][j] = score[i][j] <= limit && score[i][j] <= std::max<int64_t>(2000, 3 * std::max(best[i], best[j]));
  }
};

// True when the members (indices into the family) are connected through lock-step edges.
bool connected(const std::vector<size_t>& members, const Edges& e) {
  if (members.empty()) return false;
  std::vector<bool> seen(members.size(), false);
  std::vector<size_t> stack = {0};
  seen[0] = true;
  while (!stack.empty()) {
    size_t u = stack.back();
    stack.pop_back();
    for (size_t v = 0; v < members.size(); ++v)
      if (!seen[v] && e.on[members[u]][members[v]]) seen[v] = true, stack.push_back(v);
  }
  return std::all_of(seen.begin(), seen.end(), [](bool x) { return x; });
}

// With a layout, a family's streams are split along its groups: the kind (TP, DP) whose groups
// each hold one coherent stream per member rank, or pipeline links (a stream on stage s paired
// with its most coherent stream on stage s+1 of the same pipeline). Empty when nothing fits.
std::vector<Communicator> partition_by_layout(const std::vector<const StreamSummary*>& fam,
                                              const topology::ParallelLayout& l, const Edges& e) {
  using topology::GroupKind;
  for (const auto* s : fam)
    if (s->rank >= l.world()) return {};
  for (auto kind : {GroupKind::TP, GroupKind::DP}) {
    const size_t size = size_t(kind == GroupKind::TP ? l.tp : l.dp);
    if (size < 2) continue;
    std::map<int, std::vector<size_t>> parts;
    for (size_t i = 0; i < fam.size(); ++i) parts[topology::group_of(l, kind, fam[i]->rank).index].push_back(i);
    bool ok = true;
    for (const auto& [idx, p] : parts) {
      std::set<int32_t> ranks;
      for (size_t i : p) ranks.insert(fam[i]->rank);
      ok = ok && p.size() == size && ranks.size() == size && connected(p, e);
    }
    if (!ok) continue;
    std::vector<Communicator> out;
    for (const auto& [idx, p] : parts) {
      Communicator c;
      c.name = topology::CommunicatorGroup{kind, idx, {}}.name();
      for (size_t i : p) c.type = fam[i]->first_type, c.members.push_back({fam[i]->rank, fam[i]->stream, fam[i]->ops});
      out.push_back(std::move(c));
    }
    return out;
  }
  if (l.pp < 2) return {};
  // Pipeline links: a stream on stage s and one on stage s+1 of the same pipeline, best first.
  struct Cand {
    int64_t score;
    size_t a, b;
  };
  std::vector<Cand> cands;
  for (size_t i = 0; i < fam.size(); ++i)
    for (size_t j = 0; j < fam.size(); ++j) {
      const int ri = fam[i]->rank, rj = fam[j]->rank;
      if (l.pp_rank(rj) != l.pp_rank(ri) + 1 || l.tp_rank(ri) != l.tp_rank(rj) || l.dp_rank(ri) != l.dp_rank(rj)) continue;
      if (e.on[i][j]) cands.push_back({e.score[i][j], i, j});
    }
  std::sort(cands.begin(), cands.end(), [](auto& x, auto& y) { return std::tie(x.score, x.a, x.b) < std::tie(y.score, y.a, y.b); });
  std::vector<bool> used(fam.size(), false);
  std::vector<Communicator> out;
  for (const auto& c : cands) {
    if (used[c.a] || used[c.b]) continue;
    used[c.a] = used[c.b] = true;
    const auto* x = fam[c.a];
    const auto* y = fam[c.b];
    Communicator comm;
    comm.name = topology::group_of(l, GroupKind::PP, x->rank).name() + ":" + std::to_string(l.pp_rank(x->rank)) + "-" +
                std::to_string(l.pp_rank(y->rank));
    comm.type = x->first_type;
    comm.members = {{x->rank, x->stream, x->ops}, {y->rank, y->stream, y->ops}};
    out.push_back(std::move(comm));
  }
  if (std::find(used.begin(), used.end(), false) != used.end()) return {};
  return out;
}

}  // namespace

bool coherent(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t limit_ns) {
  return lockstep_score(a, b) <= limit_ns;
}

std::vector<Communicator> infer_communicators(std::vector<StreamSummary> streams,
                                              const std::optional<topology::ParallelLayout>& layout,
                                              const CommunicatorOptions& opt) {
  std::sort(streams.begin(), streams.end(),
            [](auto& a, auto& b) { return std::tie(a.rank, a.stream) < std::tie(b.rank, b.stream); });
  std::map<uint64_t, std::vector<size_t>> families;
  // Family: same type sequence at the same rate (TP and DP all-reduces look alike otherwise).
  for (size_t i = 0; i < streams.size(); ++i)
    families[streams[i].type_prefix_hash * 1000003u + streams[i].ops_per_iteration].push_back(i);
  std::vector<Communicator> comms;
  for (const auto& [hash, idx] : families) {
    std::vector<const StreamSummary*> fam;
    for (size_t i : idx) fam.push_back(&streams[i]);
    const Edges e(fam, opt.coherence_ns);
    std::vector<Communicator> found;
    if (layout) found = partition_by_layout(fam, *layout, e);
    if (found.empty()) {
      // No layout, or it does not fit: join lock-step pairs, closest first, one stream per rank.
      struct Cand {
        int64_t score;
        size_t i, j;
      };
      std::vector<Cand> cands;
      for (size_t i = 0; i < fam.size(); ++i)
        for (size_t j = i + 1; j < fam.size(); ++j)
          if (e.on[i][j]) cands.push_back({e.score[i][j], i, j});
      std::sort(cands.begin(), cands.end(), [](auto& x, auto& y) { return std::tie(x.score, x.i, x.j) < std::tie(y.score, y.i, y.j); });
      UnionFind uf(fam.size());
      std::vector<std::vector<size_t>> members(fam.size());
      for (size_t i = 0; i < fam.size(); ++i) members[i] = {i};
      for (const auto& c : cands) {
        size_t ri = uf.find(c.i), rj = uf.find(c.j);
        if (ri == rj) continue;
        bool clash = false;
        for (size_t a : members[ri])
          for (size_t b : members[rj]) clash = clash || fam[a]->rank == fam[b]->rank;
        if (clash) continue;
        uf.parent[rj] = ri;
        members[ri].insert(members[ri].end(), members[rj].begin(), members[rj].end());
        members[rj].clear();
      }
      for (size_t i = 0; i < fam.size(); ++i) {
        if (uf.find(i) != i || members[i].size() < 2) continue;
        Communicator g;
        for (size_t m : members[i]) g.type = fam[m]->first_type, g.members.push_back({fam[m]->rank, fam[m]->stream, fam[m]->ops});
        found.push_back(std::move(g));
      }
    }
    for (auto& c : found) {
      c.family = hash * 1000003u + c.members.size();
      comms.push_back(std::move(c));
    }
  }
  for (auto& c : comms)
    std::sort(c.members.begin(), c.members.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  std::sort(comms.begin(), comms.end(), [](auto& a, auto& b) {
    return std::tie(a.members.front().rank, a.members.front().stream) < std::tie(b.members.front().rank, b.members.front().stream);
  });
  for (size_t i = 0; i < comms.size(); ++i)
    if (comms[i].name.empty()) comms[i].name = "comm-" + std::to_string(i);
  return comms;
}

}  // namespace collectives
