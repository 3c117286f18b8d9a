#include "collectives/what_if.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "common/stats.hpp"

namespace collectives {

namespace {

struct OpNode {
  double last = 0, transfer = 0;  // last arrival; end - last arrival (never negative here)
  uint32_t comm = 0, seq = 0;
  uint32_t first = 0, count = 0;  // its members: entries by_op[first, first + count)
  bool window = true;             // in the window (else the lead-in)
  uint32_t like_first = 0, like_count = 0;  // its like (family, seq): likes[first, first + count)
};

struct Entry {  // one member's arrival at one op
  int32_t rank = -1;
  uint32_t op = 0;
  uint32_t pos = 0;    // member position within the op (used for p2p links)
  double arrival = 0, gap = 0;
  int64_t launch = 0;  // on the rank's own clock: only compared with its other launches
  int64_t ready_op = -1;  // asynchronous: the op whose end (+ lead) its data waited for (set_launch_dependency)
  double lead = 0;
  int64_t prev = -1;  // the rank's previous entry on the same communicator
  uint32_t peers_first = 0, peers_count = 0;  // its role peers at the same point: peer_gaps[first, first + count)
  bool fixed = false;  // nothing before it in the window: stays where it was
};

// Where a rank is in the step: family, op position, end of a p2p link (collectives: 0).
using Key = std::tuple<uint64_t, uint32_t, uint32_t>;
struct PeerGap {
  Key key;  // role folded in
  double gap;
  int32_t rank;
  bool operator<(const PeerGap& o) const { return std::tie(key, gap, rank) < std::tie(o.key, o.gap, o.rank); }
};

// The median of the kept values of a range sorted by value (the mean of the two middle ones for
// an even count); `none` when nothing is kept.
template <class T, class Keep, class Get>
double kept_median(std::span<const T> v, Keep keep, Get get, double none) {
  size_t n = 0;
  for (const auto& x : v) n += keep(x);
  if (!n) return none;
  const size_t lo = (n - 1) / 2, hi = n / 2;
  double a = 0;
  size_t i = 0;
  for (const auto& x : v) {
    if (!keep(x)) continue;
    if (i == lo) a = get(x);
    if (i == hi) return 0.5 * (a + get(x));
    ++i;
  }
  return none;  // not reached
}


}  // namespace

struct WhatIfReplay::Model {
  std::vector<OpNode> ops;
  std::vector<Entry> entries;
  std::vector<uint32_t> by_op;                  // entry indices grouped by op
  std::vector<uint32_t> dep_first, deps;        // CSR: ops whose end entry e waited for
  std::vector<uint32_t> order;                  // topological: < entries.size() an entry, else an op
  std::vector<int32_t> role;                    // by rank
  std::vector<uint8_t> data_parallel;           // by communicator
  std::vector<uint8_t> shared;                  // by communicator: a p2p link on streams shared with other links
  static constexpr uint32_t kSharedStream = 0xffffffffu;
  uint32_t stream_of(uint32_t comm) const { return comm < shared.size() && shared[comm] ? kSharedStream : comm; }
  std::vector<Key> key;                         // by entry
  // Flat and sorted, not a container per key: a replay's build is one of many (each phase, each
  // iteration), and small allocations dominated it.
  std::vector<PeerGap> peer_gaps;               // by key, gap, rank
  struct Like {
    Key key;  // (family, seq, 0)
    double transfer;
    uint32_t comm;
    bool operator<(const Like& o) const { return std::tie(key, transfer, comm) < std::tie(o.key, o.transfer, o.comm); }
  };
  std::vector<Like> likes;  // every op replayed, by key and transfer
  double like_median(const OpNode& op, const WhatIfChange& change, bool own_link) const;
  std::map<int32_t, double> stage_work;
  double start = 0, makespan = 0;

  int32_t role_of(int32_t r) const { return r >= 0 && size_t(r) < role.size() ? role[size_t(r)] : 0; }
  Key peer_key(size_t e) const {
    const auto& k = key[e];
    return {std::get<0>(k) ^ (uint64_t(uint32_t(role_of(entries[e].rank))) * 0xff51afd7ed558ccdull), std::get<1>(k),
            std::get<2>(k)};
  }
  void build(const WhatIfInputs& in);
  struct RankStreams {
    // stream -> the rank's entries there, by arrival. A stream is its communicator's, except that
    // p2p links whose members' streams serve other links too (batched send/recv) share one.
    std::map<uint32_t, std::vector<uint32_t>> on_comm;
    std::vector<uint8_t> overlapped;                    // by position in the rank's arrival order
    std::set<uint32_t> async;                           // asynchronous communicators
    std::vector<uint32_t> blocking_by_launch;           // entries on blocking communicators, by launch
  };
  void link_entries();
  RankStreams classify(const std::vector<uint32_t>& list) const;
  void set_gap(uint32_t e);
  void set_launch_dependency(uint32_t e, const RankStreams& rs);
  void sort_topologically();
  void build_tables(const WhatIfInputs& in);
  double run(const WhatIfChange* change) const;
  double peer_median(size_t e, const std::vector<int32_t>& excluded) const;
};

void WhatIfReplay::Model::build(const WhatIfInputs& in) {
  role = in.role, data_parallel = in.comm_data_parallel, shared = in.comm_shared;
  const auto& rec = *in.records;
  std::optional<RecordIndex> own;
  const RecordIndex& index = in.index ? *in.index : own.emplace(rec);
  // The window's ops (and the lead-in iteration's) and their members, in record order.
  for (uint32_t i : index.ops_in(in.first_iteration == INT32_MIN ? INT32_MIN : in.first_iteration - 1, in.end_iteration)) {
    const auto& o = rec.ops[i];
    if (o.last < 0) continue;  // no last arriver: nothing to replay
    const uint32_t node = uint32_t(ops.size());
    ops.push_back({double(o.last_arrival), double(std::max<int64_t>(o.transfer, 0)), o.comm, o.seq, 0, 0,
                   o.iteration >= in.first_iteration});
    for (uint32_t k : index.members_of(i)) {
      const auto& m = rec.members[k];
      if (m.rank < 0) continue;
      Entry e;
      e.rank = m.rank, e.op = node, e.arrival = double(m.arrival), e.launch = m.launch;
      entries.push_back(e);
    }
  }
  // Members by op, in record order (member order within a communicator).
  std::vector<uint32_t> count(ops.size() + 1, 0);
  for (const auto& e : entries) ++count[e.op + 1];
  for (size_t o = 0; o < ops.size(); ++o) count[o + 1] += count[o], ops[o].first = count[o];
  by_op.assign(entries.size(), 0);
  std::vector<uint32_t> fill(count.begin(), count.end() - 1);
  for (uint32_t e = 0; e < entries.size(); ++e) {
    const uint32_t o = entries[e].op;
    entries[e].pos = fill[o] - ops[o].first;
    by_op[fill[o]++] = e;
    ++ops[o].count;
  }
  key.resize(entries.size());
  for (size_t e = 0; e < entries.size(); ++e) {
    const auto& op = ops[entries[e].op];
    const bool p2p = op.comm < in.comm_p2p.size() && in.comm_p2p[op.comm];
    const uint64_t fam = op.comm < in.comm_family.size() ? in.comm_family[op.comm] : op.comm;
    key[e] = {fam, op.seq, p2p ? entries[e].pos : 0u};
  }
  link_entries();
  sort_topologically();
  build_tables(in);
}

// A rank's dependencies, from its own record (docs/what-if.md):
//  * its ops on one communicator run in order (one CUDA stream: a kernel starts only after the
//    previous one on its stream ended; CUDA's stream semantics): each depends on the previous end;
//  * a communicator is asynchronous for the rank when most of its ops overlap the rank's arrivals
//    at other communicators' ops (gradient buckets reduced beside the backward); the others are
//    blocking (a TP all-reduce, a pipeline recv: the compute stream waits for them);
//  * a blocking op, and an asynchronous one the rank did not go on beside (the last bucket before
//    the optimizer), holds up everything after it: its end is a dependency of the rank's first
//    arrival after it on each other blocking communicator;
//  * an asynchronous op waits for the compute that produced its data: its dependency is the last
//    blocking op the host launched before launching it (the launch order is the program order;
//    a bucket that queued behind a late one started later than that, which is no dependency).
// The measured order of arrivals on different streams is not a dependency: a bucket that queued
// behind a late one must not hold up the backward beside it in a replay where that one is early.
void WhatIfReplay::Model::link_entries() {
  std::map<int32_t, std::vector<uint32_t>> of_rank;
  for (uint32_t e = 0; e < entries.size(); ++e) of_rank[entries[e].rank].push_back(e);
  std::vector<std::pair<uint32_t, uint32_t>> dep_pairs;  // (entry, op whose end it waited for)
  for (auto& [rank, list] : of_rank) {
    std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return std::tie(entries[a].arrival, entries[a].op) < std::tie(entries[b].arrival, entries[b].op);
    });
    const RankStreams rs = classify(list);
    for (size_t k = 0; k < list.size(); ++k) {
      const uint32_t o = entries[list[k]].op;
      if (rs.async.count(ops[o].comm) && rs.overlapped[k]) continue;
      const double end = ops[o].last + ops[o].transfer;
      for (const auto& [comm, chain] : rs.on_comm) {
        if (comm == stream_of(ops[o].comm) || rs.async.count(comm)) continue;
        auto it = std::lower_bound(chain.begin(), chain.end(), end, [&](uint32_t e, double t) { return entries[e].arrival < t; });
        if (it != chain.end()) dep_pairs.emplace_back(*it, o);
      }
    }
    for (uint32_t e : list)
      if (rs.async.count(ops[entries[e].op].comm)) set_launch_dependency(e, rs);
    for (const auto& [comm, chain] : rs.on_comm)
      for (size_t k = 1; k < chain.size(); ++k) {
        entries[chain[k]].prev = chain[k - 1];
        dep_pairs.emplace_back(chain[k], entries[chain[k - 1]].op);
      }
  }
  std::sort(dep_pairs.begin(), dep_pairs.end());
  dep_pairs.erase(std::unique(dep_pairs.begin(), dep_pairs.end()), dep_pairs.end());
  dep_first.assign(entries.size() + 1, 0);
  deps.clear();
  deps.reserve(dep_pairs.size());
  for (const auto& [e, o] : dep_pairs) ++dep_first[e + 1], deps.push_back(o);
  for (size_t e = 0; e < entries.size(); ++e) dep_first[e + 1] += dep_first[e];
  for (uint32_t e = 0; e < entries.size(); ++e) set_gap(e);
}

// Which of a rank's ops overlapped its arrivals elsewhere, and which communicators are asynchronous.
WhatIfReplay::Model::RankStreams WhatIfReplay::Model::classify(const std::vector<uint32_t>& list) const {
  RankStreams rs;
  for (uint32_t e : list) rs.on_comm[stream_of(ops[entries[e].op].comm)].push_back(e);
  rs.overlapped.assign(list.size(), 0);
  std::map<uint32_t, std::pair<size_t, size_t>> share;  // comm -> (overlapped, ops)
  for (size_t k = 0; k < list.size(); ++k) {
    const Entry& me = entries[list[k]];
    const auto& op = ops[me.op];
    const double end = op.last + op.transfer;
    // Went on: started another communicator's op that the host launched after this one. (An op
    // launched earlier and started meanwhile, a send queued behind its data, is no evidence.)
    for (size_t j = k + 1; j < list.size() && entries[list[j]].arrival < end && !rs.overlapped[k]; ++j)
      rs.overlapped[k] = stream_of(ops[entries[list[j]].op].comm) != stream_of(op.comm) && entries[list[j]].launch > me.launch;
    auto& sh = share[op.comm];
    sh.first += rs.overlapped[k], ++sh.second;
  }
  // A data-parallel communicator is asynchronous even where a late peer held its buckets until
  // the backward had ended (nothing overlapped them then: the fault changed that, not the program).
  for (const auto& [comm, sh] : share)
    if (2 * sh.first > sh.second || (comm < data_parallel.size() && data_parallel[comm])) rs.async.insert(comm);
  for (uint32_t e : list)
    if (!rs.async.count(ops[entries[e].op].comm)) rs.blocking_by_launch.push_back(e);
  std::stable_sort(rs.blocking_by_launch.begin(), rs.blocking_by_launch.end(),
                   [&](uint32_t a, uint32_t b) { return entries[a].launch < entries[b].launch; });
  return rs;
}

// An asynchronous op waits for the data the compute produced before the host launched it: the
// blocking op launched last before it that had ended by its start (one still running then, a send
// waiting for its receiver, was not it), plus the share of the compute from that op's end to the
// next blocking op's start that the launches put before it (the host issues in program order, so
// the launch times place the op between the two; a bucket that queued behind a late one started
// later than its data was ready, and the replay must not keep that queueing).
void WhatIfReplay::Model::set_launch_dependency(uint32_t e, const RankStreams& rs) {
  Entry& en = entries[e];
  const auto& order = rs.blocking_by_launch;
  auto next = std::lower_bound(order.begin(), order.end(), en.launch, [&](uint32_t b, int64_t l) { return entries[b].launch < l; });
  auto it = next;
  for (int look = 0; it != order.begin() && look < 64; ++look) {
    const Entry& b = entries[*--it];
    const double end = ops[b.op].last + ops[b.op].transfer;
    if (end > en.arrival) continue;
    en.ready_op = int64_t(b.op);
    if (next != order.end() && entries[*next].launch > b.launch) {
      const double share = double(en.launch - b.launch) / double(entries[*next].launch - b.launch);
      en.lead = std::clamp(share * (entries[*next].arrival - end), 0.0, en.arrival - end);
    }
    return;
  }
}

// The gap: from the latest dependency (as measured) to the arrival. Nothing before it: it stays.
void WhatIfReplay::Model::set_gap(uint32_t e) {
  Entry& en = entries[e];
  en.fixed = en.prev < 0 && dep_first[e] == dep_first[e + 1] && en.ready_op < 0;
  double ready = en.prev >= 0 ? entries[size_t(en.prev)].arrival : -1e300;
  for (uint32_t d = dep_first[e]; d < dep_first[e + 1]; ++d) ready = std::max(ready, ops[deps[d]].last + ops[deps[d]].transfer);
  if (en.ready_op >= 0) ready = std::max(ready, ops[size_t(en.ready_op)].last + ops[size_t(en.ready_op)].transfer + en.lead);
  en.gap = en.fixed ? 0 : std::max(0.0, en.arrival - ready);
}

// Kahn's algorithm over entries (ids [0, E)) and op ends (E + op). Edges follow measured time, so
// there is no cycle unless zero-length ties make one; nodes left over go last, in time order.
void WhatIfReplay::Model::sort_topologically() {
  const size_t E = entries.size(), N = E + ops.size();
  std::vector<uint32_t> indeg(N, 0), out_first(N + 1, 0), out;  // out-edges in CSR
  auto edges = [&](auto&& edge) {
    for (uint32_t e = 0; e < E; ++e) {
      if (entries[e].prev >= 0) edge(uint32_t(entries[e].prev), e);
      for (uint32_t d = dep_first[e]; d < dep_first[e + 1]; ++d) edge(uint32_t(E + deps[d]), e);
      if (entries[e].ready_op >= 0) edge(uint32_t(E + size_t(entries[e].ready_op)), e);
      edge(e, uint32_t(E + entries[e].op));
    }
  };
  edges([&](uint32_t from, uint32_t to) { ++out_first[from + 1], ++indeg[to]; });
  for (size_t n = 0; n < N; ++n) out_first[n + 1] += out_first[n];
  out.resize(out_first[N]);
  std::vector<uint32_t> fill(out_first.begin(), out_first.end() - 1);
  edges([&](uint32_t from, uint32_t to) { out[fill[from]++] = to; });
  order.clear();
  order.reserve(N);
  for (uint32_t n = 0; n < N; ++n)
    if (!indeg[n]) order.push_back(n);
  for (size_t i = 0; i < order.size(); ++i)
    for (uint32_t k = out_first[order[i]]; k < out_first[order[i] + 1]; ++k)
      if (--indeg[out[k]] == 0) order.push_back(out[k]);
  if (order.size() < N) {
    auto time = [&](uint32_t n) { return n < E ? entries[n].arrival : ops[n - E].last + ops[n - E].transfer; };
    std::vector<uint32_t> rest;
    for (uint32_t n = 0; n < N; ++n)
      if (indeg[n]) rest.push_back(n);
    std::sort(rest.begin(), rest.end(), [&](uint32_t a, uint32_t b) { return time(a) < time(b); });
    order.insert(order.end(), rest.begin(), rest.end());
  }
}

void WhatIfReplay::Model::build_tables(const WhatIfInputs& in) {
  std::map<int32_t, double> work_of_rank;
  for (size_t e = 0; e < entries.size(); ++e) {
    if (!entries[e].fixed) peer_gaps.push_back({peer_key(e), entries[e].gap, entries[e].rank});
    work_of_rank[entries[e].rank] += entries[e].gap;
  }
  std::sort(peer_gaps.begin(), peer_gaps.end());
  for (size_t e = 0; e < entries.size(); ++e) {
    const Key k = peer_key(e);
    const auto lo = std::lower_bound(peer_gaps.begin(), peer_gaps.end(), PeerGap{k, -1e300, INT32_MIN});
    const auto hi = std::upper_bound(lo, peer_gaps.end(), PeerGap{k, 1e300, INT32_MAX});
    entries[e].peers_first = uint32_t(lo - peer_gaps.begin()), entries[e].peers_count = uint32_t(hi - lo);
  }
  likes.reserve(ops.size());
  for (const auto& op : ops) likes.push_back({{std::get<0>(key[by_op[op.first]]), op.seq, 0}, op.transfer, op.comm});
  std::sort(likes.begin(), likes.end());
  for (auto& op : ops) {
    const Key k{std::get<0>(key[by_op[op.first]]), op.seq, 0};
    const auto lo = std::lower_bound(likes.begin(), likes.end(), Like{k, -1e300, 0});
    const auto hi = std::upper_bound(lo, likes.end(), Like{k, 1e300, UINT32_MAX});
    op.like_first = uint32_t(lo - likes.begin()), op.like_count = uint32_t(hi - lo);
  }
  // Compute time where given for every rank replayed (gaps hold idle time and waits on other
  // streams too), else the gaps.
  const bool given = std::all_of(work_of_rank.begin(), work_of_rank.end(), [&](const auto& rw) {
    return rw.first >= 0 && size_t(rw.first) < in.work.size() && in.work[size_t(rw.first)] > 0;
  });
  std::map<int32_t, std::vector<double>> by_stage;
  for (const auto& [r, w] : work_of_rank) by_stage[role_of(r)].push_back(given ? in.work[size_t(r)] : w);
  for (auto& [s, v] : by_stage) stage_work[s] = common::median(v);
  start = 1e300;
  double end = -1e300;
  for (const auto& e : entries)
    if (ops[e.op].window) start = std::min(start, e.arrival);
  for (const auto& o : ops)
    if (o.window) end = std::max(end, o.last + o.transfer);
  makespan = end > start ? end - start : 0;
}

// The median gap of the entry's role peers at the same point, leaving out `excluded` (sorted).
// The entry's own gap when no peer has that point.
double WhatIfReplay::Model::peer_median(size_t e, const std::vector<int32_t>& excluded) const {
  const Entry& en = entries[e];
  auto kept = [&](const PeerGap& g) { return !std::binary_search(excluded.begin(), excluded.end(), g.rank); };
  return kept_median(std::span<const PeerGap>(peer_gaps.data() + en.peers_first, en.peers_count), kept,
                     [](const PeerGap& g) { return g.gap; }, en.gap);
}

// The median transfer of the op's like (the same position on the family's other communicators),
// leaving out the communicators being fixed: a slow link's own communicators are no measure of a
// healthy one (two slow of four would put the median halfway). For a rank's own slow link the op's
// own communicator is left out too. The op's own transfer when no like is left.
double WhatIfReplay::Model::like_median(const OpNode& op, const WhatIfChange& change, bool own_link) const {
  auto kept = [&](const Like& l) {
    return !(own_link && l.comm == op.comm) && std::find(change.comms.begin(), change.comms.end(), l.comm) == change.comms.end();
  };
  return kept_median(std::span<const Like>(likes.data() + op.like_first, op.like_count), kept,
                     [](const Like& l) { return l.transfer; }, op.transfer);
}

double WhatIfReplay::Model::run(const WhatIfChange* change) const {
  const size_t E = entries.size();
  std::vector<int32_t> fixed_ranks, link_ranks;
  if (change) fixed_ranks = change->ranks, link_ranks = change->links;
  std::sort(fixed_ranks.begin(), fixed_ranks.end());
  std::sort(link_ranks.begin(), link_ranks.end());
  auto listed = [](const std::vector<int32_t>& v, int32_t r) { return std::binary_search(v.begin(), v.end(), r); };
  double mean_work = 0;
  for (const auto& [s, w] : stage_work) mean_work += w / double(stage_work.size());
  std::vector<double> t(E + ops.size(), 0);
  double first = 1e300, end = -1e300;  // over the window (the lead-in only holds it up)
  for (uint32_t n : order) {
    if (n >= E) {  // an op's end: the last (replayed) arrival plus its transfer
      const auto& op = ops[n - E];
      double last = -1e300, transfer = op.transfer;
      bool by_rank = false;  // a member's own link is slow
      for (uint32_t i = op.first; i < op.first + op.count; ++i) {
        last = std::max(last, t[by_op[i]]);
        by_rank = by_rank || listed(link_ranks, entries[by_op[i]].rank);
      }
      if (change && change->hide_communication) transfer = 0;
      const bool by_comm = change && std::find(change->comms.begin(), change->comms.end(), op.comm) != change->comms.end();
      if (by_rank || by_comm) transfer = std::min(transfer, like_median(op, *change, by_rank));
      t[n] = last + transfer;
      if (op.window) end = std::max(end, t[n]);
      continue;
    }
    const Entry& e = entries[n];
    if (e.fixed) {
      t[n] = e.arrival;
      if (ops[e.op].window) first = std::min(first, t[n]);
      continue;
    }
    double ready = e.prev >= 0 ? t[size_t(e.prev)] : -1e300, gap = e.gap;
    for (uint32_t d = dep_first[n]; d < dep_first[n + 1]; ++d) ready = std::max(ready, t[E + deps[d]]);
    if (e.ready_op >= 0) ready = std::max(ready, t[E + size_t(e.ready_op)] + e.lead);
    // At its peers' median, never slower than it was: a peer's gap may be measured from another
    // dependency than the rank's own (the order of near-simultaneous events differs).
    if (listed(fixed_ranks, e.rank)) gap = std::min(gap, peer_median(n, fixed_ranks));
    if (change && change->balance_stages) {
      const auto it = stage_work.find(role_of(e.rank));
      if (it != stage_work.end() && it->second > 0) gap *= mean_work / it->second;
    }
    t[n] = ready + gap;
    if (ops[e.op].window) first = std::min(first, t[n]);
  }
  return end > first ? end - first : 0;
}

RecordIndex::RecordIndex(const BlameRecords& r) {
  // Members by op (record order within an op); ops by iteration (an index of the op's last
  // arriver's iterations: at most its count, or -1).
  members_ = common::group_by(r.members.size(), r.ops.size(), [&](size_t k) { return size_t(r.members[k].op); });
  int32_t hi = 0;
  lowest_ = 0;
  for (const auto& o : r.ops) lowest_ = std::min(lowest_, o.iteration), hi = std::max(hi, o.iteration);
  by_iteration_ = common::group_by(r.ops.size(), size_t(int64_t(hi) - lowest_ + 1),
                                   [&](size_t i) { return size_t(int64_t(r.ops[i].iteration) - lowest_); });
}

std::vector<uint32_t> RecordIndex::ops_in(int32_t first, int32_t end) const {
  const auto& f = by_iteration_.first;
  const int64_t slots = int64_t(f.size()) - 1;
  const int64_t a = std::clamp<int64_t>(int64_t(first) - lowest_, 0, slots), b = std::clamp<int64_t>(int64_t(end) - lowest_, 0, slots);
  std::vector<uint32_t> out;
  if (a >= b) return out;
  out.assign(by_iteration_.ids.begin() + f[size_t(a)], by_iteration_.ids.begin() + f[size_t(b)]);
  std::sort(out.begin(), out.end());
  return out;
}

WhatIfReplay::WhatIfReplay(const WhatIfInputs& in) : m_(std::make_unique<Model>()) {
  if (in.records) m_->build(in);
}
WhatIfReplay::~WhatIfReplay() = default;
size_t WhatIfReplay::ops() const {
  return size_t(std::count_if(m_->ops.begin(), m_->ops.end(), [](const OpNode& o) { return o.window; }));
}
int WhatIfReplay::stages() const { return int(m_->stage_work.size()); }
double WhatIfReplay::makespan_ns() const { return m_->makespan; }
double WhatIfReplay::replay_unchanged_ns() const { return m_->run(nullptr); }
double WhatIfReplay::replay(const WhatIfChange& change) const { return m_->run(&change); }

}  // namespace collectives
