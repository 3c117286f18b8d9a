// The what-if replay's dependencies (docs/what-if.md, rules 2-5): each rank's arrivals linked to
// the op ends that held them up, its streams classified blocking or asynchronous, its p2p links
// told apart. The model is in what_if_model.hpp; what_if.cpp builds and runs it.
#include <algorithm>
#include <functional>
#include <optional>
#include <tuple>

#include "what_if_model.hpp"

namespace collectives {

// Each p2p entry's link: the role of its other end (the stage it talks to: the same for every rank
// of a role, wherever a window cuts the schedule), then, among the rank's links of the family to
// that role, their order of first use (peer_order.hpp, order_links: one communicator per
// direction between the same two ranks).
void WhatIfReplay::Model::order_links() {
  std::vector<LinkUse> uses;
  std::vector<uint32_t> other(entries.size(), 0);
  for (uint32_t e = 0; e < entries.size(); ++e) {
    const OpNode& op = ops[entries[e].op];
    if (!op.p2p) continue;
    for (uint32_t i = op.first; i < op.first + op.count; ++i)
      if (entries[i].rank != entries[e].rank) other[e] = uint32_t(role_of(entries[i].rank) + 1) & 0xff;
    uses.push_back({entries[e].rank, op.family ^ (uint64_t(other[e]) * 0x9e3779b97f4a7c15ull), entries[e].arrival, op.comm, e});
  }
  std::vector<uint32_t> link(entries.size(), 0);
  collectives::order_links(std::move(uses), link);
  for (size_t e = 0; e < entries.size(); ++e) entries[e].link = other[e] << 8 | std::min<uint32_t>(link[e], 0xff);
}

// A rank's dependencies, from its own record (docs/what-if.md):
//  * its ops on one communicator run in order (one CUDA stream: a kernel starts only after the
//    previous one on its stream ended; CUDA's stream semantics): each depends on the previous end;
//  * a communicator is asynchronous for the rank when most of its ops overlap the rank's arrivals
//    at other communicators' ops (gradient buckets reduced beside the backward); the others are
//    blocking (a TP all-reduce, a pipeline recv: the compute stream waits for them);
//  * a blocking op, and an asynchronous one the rank did not go on beside, holds up everything
//    after it: its end is a dependency of the rank's first arrival after it on each other
//    blocking communicator; of a data-parallel group's buckets only each step's last one does
//    (find_step_ends);
//  * an asynchronous op waits for the compute that produced its data: its dependency is the last
//    blocking op the host launched before launching it (the launch order is the program order;
//    a bucket that queued behind a late one started later than that, which is no dependency).
// The measured order of arrivals on different streams is not a dependency: a bucket that queued
// behind a late one must not hold up the backward beside it in a replay where that one is early.
void WhatIfReplay::Model::link_entries() {
  // Ranks are small integers: their entries by a counting sort (entry order within a rank).
  const common::Csr of_rank = common::group_by(entries.size(), ranks, [&](size_t e) { return size_t(entries[e].rank); });
  // Peers tell a rank's program apart only where roles do: one role and pipeline links would put
  // ranks of different stages, which run different programs, in one group.
  bool any_p2p = false, roles = false;
  for (const auto& op : ops) any_p2p = any_p2p || op.p2p;
  for (const auto& en : entries) roles = roles || role_of(en.rank) != role_of(entries.front().rank);
  std::optional<PeerOrder> peers;  // none where roles do not tell programs apart
  if (!entries.empty() && (roles || !any_p2p)) {
    std::vector<uint32_t> group(entries.size());
    std::vector<int32_t> rank(entries.size());
    std::vector<double> arrival(entries.size()), end(entries.size());
    for (size_t e = 0; e < entries.size(); ++e)
      group[e] = entries[e].peers, rank[e] = entries[e].rank, arrival[e] = entries[e].arrival, end[e] = ops[entries[e].op].end();
    peers.emplace(std::move(group), std::move(rank), std::move(arrival), std::move(end), peer_groups);
  }
  RankStreams rs;
  rs.mark.assign(comms + 1, 0), rs.slot_of.assign(comms + 1, 0);
  rs.overlaps.assign(comms, 0), rs.count.assign(comms, 0), rs.async.assign(comms, 0);
  deps.reserve(3 * entries.size());
  for (size_t r = 0; r < ranks; ++r) {
    if (of_rank.of(r).empty()) continue;
    rs.list.clear();
    for (uint32_t e : of_rank.of(r)) {
      const OpNode& op = ops[entries[e].op];
      rs.list.push_back({entries[e].arrival, op.end(), entries[e].launch, e, entries[e].op, op.comm, 0});
    }
    // By (arrival, op): std::sort on the same input with the same comparison as ever, so that even
    // ties (a rank twice in one op) come out in the same order.
    std::sort(rs.list.begin(), rs.list.end(),
              [](const auto& a, const auto& b) { return std::tie(a.arrival, a.op) < std::tie(b.arrival, b.op); });
    classify(rs, uint32_t(r + 1));
    link_rank(rs, peers ? &*peers : nullptr);
  }
  // The gap: from the latest dependency (as measured) to the arrival. Nothing before it: it stays.
  for (Entry& en : entries) {
    en.fixed = en.prev == kNone && en.dep_count == 0 && en.ready_op == kNone;
    double ready = en.prev != kNone ? entries[en.prev].arrival : -1e300;
    for (uint32_t d = en.dep_first; d < en.dep_first + en.dep_count; ++d) ready = std::max(ready, ops[deps[d]].end());
    if (en.ready_op != kNone) ready = std::max(ready, ops[en.ready_op].end() + en.lead);
    en.gap = en.fixed ? 0 : std::max(0.0, en.arrival - ready);
  }
}

// Which of a rank's ops overlapped its arrivals elsewhere, and which communicators are asynchronous.
void WhatIfReplay::Model::classify(RankStreams& rs, uint32_t mark) const {
  auto& list = rs.list;
  const size_t n = list.size();
  rs.stream.clear();
  for (auto& at : list) {  // the streams, in order of first arrival
    const uint32_t stream = stream_of(at.comm);
    const size_t si = stream == kNone ? comms : at.comm;
    if (rs.mark[si] != mark) rs.mark[si] = mark, rs.slot_of[si] = uint32_t(rs.stream.size()), rs.stream.push_back(stream);
    at.slot = rs.slot_of[si];
    rs.overlaps[at.comm] = 0, rs.count[at.comm] = 0;
  }
  rs.chain_first = group_offsets(n, rs.stream.size(), [&](size_t k) { return list[k].slot; }, kAll);
  rs.chain.resize(n), rs.chain_arrival.resize(n);
  rs.fill.assign(rs.chain_first.begin(), rs.chain_first.end() - 1);
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = rs.fill[list[k].slot]++;
    rs.chain[i] = k, rs.chain_arrival[i] = list[k].arrival;
  }
  rs.overlapped.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    // Went on: started another communicator's op that the host launched after this one. (An op
    // launched earlier and started meanwhile, a send queued behind its data, is no evidence.)
    for (size_t j = k + 1; j < n && list[j].arrival < list[k].end && !rs.overlapped[k]; ++j)
      rs.overlapped[k] = list[j].slot != list[k].slot && list[j].launch > list[k].launch;
    rs.overlaps[list[k].comm] += rs.overlapped[k], ++rs.count[list[k].comm];
  }
  // A data-parallel communicator is asynchronous even where a late peer held its buckets until
  // the backward had ended (nothing overlapped them then: the fault changed that, not the program).
  for (const auto& at : list) {
    const uint32_t c = at.comm;
    rs.async[c] = 2 * rs.overlaps[c] > rs.count[c] || (c < data_parallel.size() && data_parallel[c]);
  }
  rs.slot_async.resize(rs.stream.size());
  for (size_t s = 0; s < rs.stream.size(); ++s) rs.slot_async[s] = rs.stream[s] != kNone && rs.async[rs.stream[s]];
  rs.blocking.clear();
  for (uint32_t k = 0; k < n; ++k)
    if (!rs.async[list[k].comm]) rs.blocking.push_back(k);
  std::sort(rs.blocking.begin(), rs.blocking.end(),  // ties in arrival order, as a stable sort
            [&](uint32_t a, uint32_t b) { return std::tie(list[a].launch, a) < std::tie(list[b].launch, b); });
}

// Which data-parallel ops end their step's burst of buckets: those an asynchronous op of a
// data-parallel communicator holds up the rank's next arrivals for. The optimizer waits for every
// gradient, the backward beside the buckets does not (DDP's and Megatron's finalize-grads wait once,
// after the backward). Whether the rank went on beside a bucket is no evidence there: a slow rank
// arrives last at every bucket and finds each one ended before its next collective, and a replay
// that makes it early must not hold its backward up for them. A stream's ops fall into one burst
// per step; iteration labels cannot mark the bursts (iterations found from collective periods start
// anywhere in the step, and ops after the last boundary share its label), so the bursts are cut at
// the wide pauses: those at least half the median of the widest (as many as the stream's ops carry
// iteration labels, less one), and after the stream's last op. A cut too many is the old rule (the
// bucket holds its next arrivals up); a cut too few would put the wait for the last bucket into the
// next step's work.
void WhatIfReplay::Model::find_step_ends(RankStreams& rs) const {
  const auto& list = rs.list;
  rs.step_end.assign(list.size(), 0);
  for (uint32_t s = 0; s < rs.stream.size(); ++s) {
    const uint32_t b = rs.chain_first[s], e = rs.chain_first[s + 1];
    const uint32_t c = rs.stream[s];
    if (b == e || c == kNone || c >= data_parallel.size() || !data_parallel[c]) continue;
    rs.step_end[rs.chain[e - 1]] = 1;
    rs.labels.clear(), rs.pause.clear();
    for (uint32_t i = b; i < e; ++i) {
      rs.labels.push_back(ops[list[rs.chain[i]].op].iteration);
      if (i + 1 < e) rs.pause.push_back(list[rs.chain[i + 1]].arrival - list[rs.chain[i]].end);
    }
    std::sort(rs.labels.begin(), rs.labels.end());
    const size_t cuts = size_t(std::unique(rs.labels.begin(), rs.labels.end()) - rs.labels.begin()) - 1;
    if (cuts == 0 || rs.pause.empty()) continue;
    rs.widest.assign(rs.pause.begin(), rs.pause.end());
    std::sort(rs.widest.begin(), rs.widest.end(), std::greater<>());
    const double least = 0.5 * rs.widest[std::min(cuts, rs.widest.size()) / 2];
    for (uint32_t i = b; i + 1 < e; ++i)
      if (rs.pause[i - b] >= least) rs.step_end[rs.chain[i]] = 1;
  }
}

// One rank's dependencies (link_entries), its streams classified. Its (k, op) pairs go into deps
// by a counting sort on k (an entry's pairs all come from its rank), not one sort of all pairs.
// None repeats unless the rank is twice in an op: only then are an entry's ops sorted and made
// unique (their order does not matter: a run takes the latest end).
void WhatIfReplay::Model::link_rank(RankStreams& rs, const PeerOrder* peers) {
  const auto& list = rs.list;
  rs.dep_pairs.clear();
  rs.hint.assign(rs.chain_first.begin(), rs.chain_first.end() - 1);
  find_step_ends(rs);
  const auto grouped_at = [&](uint32_t k) { return ops[list[k].op].p2p && stream_of(list[k].comm) == kNone; };
  for (uint32_t k = 0; k < list.size(); ++k) {
    const uint32_t c = list[k].comm;
    const bool dp = c < data_parallel.size() && data_parallel[c] && stream_of(c) != kNone;
    // A p2p op holds up what follows even when the rank went on beside it (a receive posted early
    // sits waiting while the compute runs): the data it brings is consumed; the peers refute the
    // arrivals that do not wait for it.
    if (rs.async[c] && !ops[list[k].op].p2p && (dp ? !rs.step_end[k] : rs.overlapped[k])) continue;
    for (uint32_t s = 0; s < rs.stream.size(); ++s) {
      if (s == list[k].slot || rs.slot_async[s]) continue;
      const uint32_t end = rs.chain_first[s + 1];
      rs.hint[s] = uint32_t(lower_bound_from(rs.chain_arrival.data(), rs.chain_first[s], end, rs.hint[s], list[k].end));
      // Not where the rank's role peers refute waiting for it (peer_order.hpp), unless either end
      // is a grouped p2p kernel (a stream serving two links): it ends with its last exchange,
      // which may be a send that the receive the rank's work waits for did not wait for, so its
      // peers' order about its end is no evidence.
      // Program order: a kernel waits only for work the host launched before it (CUDA stream and
      // event semantics), so an op launched before op k is no dependent of k even where it
      // arrived after k ended (a receive launched ahead on its own stream ends while the
      // compute that launched before it still runs: its consumer comes later).
      uint32_t at = rs.hint[s];
      while (at < end && list[rs.chain[at]].launch < list[k].launch) ++at;
      if (at == end) continue;
      const bool grouped = grouped_at(k) || grouped_at(rs.chain[at]);
      if (!(peers && !grouped && peers->refuted(list[k].e, list[rs.chain[at]].e)))
        rs.dep_pairs.emplace_back(rs.chain[at], list[k].op);
    }
  }
  rs.holders.clear();
  for (uint32_t k = 0; k < list.size(); ++k)
    if (rs.step_end[k] || ops[list[k].op].p2p) rs.holders.push_back(k);
  std::sort(rs.holders.begin(), rs.holders.end(), [&](uint32_t a, uint32_t b) { return list[a].end < list[b].end; });
  for (const auto& at : list)
    if (rs.async[at.comm]) set_launch_dependency(at, rs);
  // One kernel on streams shared by p2p links may be an entry of each link (a grouped kernel whose
  // exchange with one neighbour completed inside it: keep_link_ops): the same start on the same
  // stream. Its entries arrive together, and the stream's next kernel waits for all their ends.
  for (uint32_t s = 0; s < rs.stream.size(); ++s) {
    uint32_t group = rs.chain_first[s], before = group;  // the current kernel's first entry; the previous kernel's
    for (uint32_t i = rs.chain_first[s] + 1; i < rs.chain_first[s + 1]; ++i) {
      const auto &x = list[rs.chain[i]], &w = list[rs.chain[i - 1]];
      entries[x.e].prev = w.e;
      if (rs.stream[s] == kNone && x.arrival == w.arrival && x.launch == w.launch) continue;
      before = group, group = i;
      for (uint32_t j = before; j < group; ++j) rs.dep_pairs.emplace_back(rs.chain[i], list[rs.chain[j]].op);
    }
  }
  rs.pair_first = group_offsets(rs.dep_pairs.size(), list.size(), [&](size_t i) { return rs.dep_pairs[i].first; }, kAll);
  rs.fill.assign(rs.pair_first.begin(), rs.pair_first.end() - 1);
  rs.pair_ops.resize(rs.dep_pairs.size());
  for (const auto& [k, o] : rs.dep_pairs) rs.pair_ops[rs.fill[k]++] = o;
  for (size_t k = 0; k < list.size(); ++k) {
    auto b = rs.pair_ops.begin() + rs.pair_first[k], e = rs.pair_ops.begin() + rs.pair_first[k + 1];
    if (repeats) std::sort(b, e), e = std::unique(b, e);
    entries[list[k].e].dep_first = uint32_t(deps.size()), entries[list[k].e].dep_count = uint32_t(e - b);
    deps.insert(deps.end(), b, e);
  }
}

// An asynchronous op waits for the data the compute produced before the host launched it: the
// blocking op launched last before it that had ended by its start (one still running then, a send
// waiting for its receiver, was not it), plus the share of the compute from that op's end to the
// next blocking op's start that the launches put before it (the host issues in program order, so
// the launch times place the op between the two; a bucket that queued behind a late one started
// later than its data was ready, and the replay must not keep that queueing).
void WhatIfReplay::Model::set_launch_dependency(const RankStreams::Pos& at, const RankStreams& rs) {
  const auto& l = rs.list;
  const auto& order = rs.blocking;
  const auto by_launch = [&](uint32_t k, int64_t launch) { return l[k].launch < launch; };
  const size_t next = size_t(std::lower_bound(order.begin(), order.end(), at.launch, by_launch) - order.begin());
  Entry& en = entries[at.e];
  double share = 0, ready_end = -1e300;
  for (size_t it = next, look = 0; it != 0 && look < 64; ++look) {
    const auto& b = l[order[--it]];
    if (b.end > at.arrival) continue;
    en.ready_op = b.op, ready_end = b.end;
    if (next != order.size() && l[order[next]].launch > b.launch)
      share = double(at.launch - b.launch) / double(l[order[next]].launch - b.launch);
    break;
  }
  // A p2p op launched before it that had ended by its start, where that ended later: the compute
  // that made its data ran after the exchange it consumed (a receive posted early, whose wait the
  // span to the next blocking op would otherwise carry into the lead). The last gradient bucket of
  // a step likewise: the host waited for the step's reductions (the optimizer, the step's
  // synchronize) before it launched the next step's first op, and that launch, after the wait,
  // says nothing of where it sits in the compute: no lead.
  bool after_step = false;
  auto it = std::partition_point(rs.holders.begin(), rs.holders.end(), [&](uint32_t k) { return l[k].end <= at.arrival; });
  for (size_t look = 0; it != rs.holders.begin() && look < 8; ++look) {
    const auto& h = l[*--it];
    if (h.end <= ready_end) break;  // by end: the rest ended earlier still
    if (h.launch >= at.launch || h.e == at.e) continue;
    en.ready_op = h.op, ready_end = h.end, after_step = !ops[h.op].p2p;
    break;
  }
  if (en.ready_op == kNone || after_step || next == order.size()) return;
  en.lead = std::clamp(share * (l[order[next]].arrival - ready_end), 0.0, at.arrival - ready_end);
}

}  // namespace collectives
