#include "collectives/what_if.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <tuple>

#include "common/stats.hpp"
#include "peer_order.hpp"
#include "what_if_tables.hpp"

namespace collectives {

using namespace what_if_detail;

namespace {

constexpr uint32_t kNone = 0xffffffffu;  // no entry, no op; as a stream: p2p links sharing streams

struct OpNode {
  double last = 0, transfer = 0;  // last arrival; end - last arrival (never negative here)
  uint64_t family = 0;            // its communicator's
  uint32_t comm = 0, seq = 0;
  uint32_t first = 0, count = 0;  // its members: entries [first, first + count) (added op by op)
  uint32_t like = 0;              // its like (family, seq): a group of likes
  bool window = true;             // in the window (else the lead-in)
  bool p2p = false;               // on a p2p link
  int32_t iteration = 0;          // on its last arriver
  double end() const { return last + transfer; }
};

struct Entry {  // one member's arrival at one op
  double arrival = 0, gap = 0, lead = 0;
  int64_t launch = 0;  // on the rank's own clock: only compared with its other launches
  int32_t rank = -1;
  uint32_t op = 0;
  uint32_t prev = kNone;      // the rank's previous entry on the same communicator
  uint32_t ready_op = kNone;  // asynchronous: the op whose end (+ lead) its data waited for (set_launch_dependency)
  uint32_t dep_first = 0, dep_count = 0;  // ops whose end it waited for: deps[first, first + count)
  uint32_t peers = 0;         // its role peers at the same point: a group of peer_gaps
  uint32_t link = 0;          // on a p2p link: which of the rank's links of the family, in order of first use
  bool fixed = false;         // nothing before it in the window: stays where it was
  bool window = true;         // its op's
};

// A node of the replay in topological order with all that a run reads of it: a run goes through
// the steps in order instead of about the entries and ops (cache misses were most of its time).
struct Step {
  double value = 0;        // an entry's gap (its arrival when fixed); an op's transfer
  uint32_t node = 0;       // the entry, or entries + the op
  uint32_t preds_end = 0;  // the steps it follows: preds[the previous step's preds_end, preds_end)
  uint32_t who = 0;        // an entry's rank; an op's communicator
  uint8_t kind = 0;
};
constexpr uint8_t kOpStep = 1, kFixedStep = 2, kWindowStep = 4, kReadyStep = 8;  // kReadyStep: the next of readies


}  // namespace

struct WhatIfReplay::Model {
  std::vector<OpNode> ops;
  std::vector<Entry> entries;                        // op by op, an op's members in record order
  std::vector<uint32_t> deps;                        // ops whose end an entry waited for (until compiled)
  std::vector<uint32_t> order;                       // topological: < entries.size() an entry, else an op (until compiled)
  std::vector<Step> steps;                           // `order` compiled
  std::vector<uint32_t> preds;                       // by step: an entry's prev and deps, an op's members
  std::vector<std::pair<uint32_t, double>> readies;  // by kReadyStep step: its ready op's step, its lead
  std::vector<int32_t> role;                         // by rank
  std::vector<uint8_t> data_parallel;                // by communicator
  std::vector<uint8_t> shared;                       // by communicator: a p2p link on streams shared with other links
  size_t ranks = 0, comms = 0;                       // above the highest rank and communicator replayed
  bool repeats = false;                              // a rank twice in one op (an entry's deps may repeat)
  uint32_t stream_of(uint32_t comm) const { return comm < shared.size() && shared[comm] ? kNone : comm; }
  // Flat, not a container per key: a replay's build is one of many (each phase, each iteration),
  // and small allocations dominated it. Group g: [first[g], first[g + 1]), unordered within.
  std::vector<uint32_t> peer_first, like_first;
  size_t peer_groups = 0;  // distinct peer keys (Entry::peers, set before linking)
  std::vector<Sample> peer_gaps;   // the entries not fixed, grouped by peer key
  std::vector<Sample> peer_leads;  // beside peer_gaps: their leads (of kNone: no ready op)
  std::vector<Sample> likes;      // every op replayed, grouped by like
  std::map<int32_t, double> stage_work;
  std::vector<double> stage_scale;  // by rank: (mean stage work) / (its stage's work), or 1
  double start = 0, makespan = 0;

  int32_t role_of(int32_t r) const { return r >= 0 && size_t(r) < role.size() ? role[size_t(r)] : 0; }
  Key peer_key(size_t e) const {
    const OpNode& op = ops[entries[e].op];
    return {op.family ^ (uint64_t(uint32_t(role_of(entries[e].rank))) * 0xff51afd7ed558ccdull), op.seq,
            op.p2p ? uint32_t(e - op.first) | entries[e].link << 16 : 0u};
  }
  void order_links();
  void build(const WhatIfInputs& in);
  void add_ops(const WhatIfInputs& in);
  // One rank's entries and streams (classify), in buffers reused from rank to rank; what is by
  // communicator is valid where `mark` is the rank's.
  struct RankStreams {
    struct Pos {  // one of the rank's entries: what linking reads of it, side by side
      double arrival, end;  // the entry's; its op's
      int64_t launch;
      uint32_t e, op, comm, slot;
    };
    std::vector<Pos> list;                        // by arrival (k: a position in it)
    std::vector<uint32_t> stream;                 // by slot: a communicator, or kNone
    std::vector<uint8_t> slot_async, overlapped;  // by slot: an asynchronous communicator's; by k
    std::vector<uint32_t> chain_first, chain;     // by slot: its positions, by arrival
    std::vector<double> chain_arrival;            // beside chain
    std::vector<uint32_t> blocking;               // positions on blocking communicators, by launch
    std::vector<uint32_t> mark, slot_of;          // by stream index (a communicator; comms: kNone)
    std::vector<uint32_t> overlaps, count;        // by communicator: its ops that overlapped, all its ops
    std::vector<uint8_t> async;                   // by communicator
    std::vector<std::pair<uint32_t, uint32_t>> dep_pairs;  // (k, op whose end it waited for)
    std::vector<uint32_t> fill, pair_first, pair_ops, hint;
    std::vector<uint8_t> step_end;  // by k: a data-parallel op that ends its step's burst
    std::vector<double> pause, widest;  // find_step_ends' buffers
    std::vector<int32_t> labels;
  };
  void find_step_ends(RankStreams& rs) const;
  void link_entries();
  void classify(RankStreams& rs, uint32_t mark) const;
  void link_rank(RankStreams& rs, const PeerOrder* peers);
  void set_launch_dependency(const RankStreams::Pos& at, const RankStreams& rs);
  void sort_topologically();
  void compile();
  void build_tables(const WhatIfInputs& in);
  struct Run {  // one run's change, its ranks and communicators flagged (not searched per member)
    const WhatIfChange* change = nullptr;
    std::vector<uint8_t> fixed, link, comm;
    bool any_fixed = false, any_link = false;
    mutable std::vector<double> buf;  // for the medians
  };
  double run(const WhatIfChange* change) const;
  double op_end(const Step& s, const double* t, const uint32_t* pred, const Run& run) const;
};

void WhatIfReplay::Model::build(const WhatIfInputs& in) {
  role = in.role, data_parallel = in.comm_data_parallel, shared = in.comm_shared;
  add_ops(in);
  order_links();
  KeyIds peer_ids;
  for (size_t e = 0; e < entries.size(); ++e) entries[e].peers = peer_ids(peer_key(e));
  peer_groups = peer_ids.size();
  link_entries();
  sort_topologically();
  build_tables(in);
  compile();
}

// The window's ops (and the lead-in iteration's) and their members, in record order.
void WhatIfReplay::Model::add_ops(const WhatIfInputs& in) {
  const auto& rec = *in.records;
  std::optional<RecordIndex> own;
  const RecordIndex& index = in.index ? *in.index : own.emplace(rec);
  const auto ids = index.ops_in(in.first_iteration == INT32_MIN ? INT32_MIN : in.first_iteration - 1, in.end_iteration);
  size_t members = 0;
  for (uint32_t i : ids) members += index.members_of(i).size();
  ops.reserve(ids.size()), entries.reserve(members);
  std::vector<uint32_t> last_op_of;  // by rank
  for (uint32_t i : ids) {
    const auto& o = rec.ops[i];
    if (o.last < 0) continue;  // no last arriver: nothing to replay
    OpNode op;
    op.last = double(o.last_arrival), op.transfer = double(std::max<int64_t>(o.transfer, 0));
    op.comm = o.comm, op.seq = o.seq, op.window = o.iteration >= in.first_iteration, op.first = uint32_t(entries.size());
    op.p2p = op.comm < in.comm_p2p.size() && in.comm_p2p[op.comm], op.iteration = o.iteration;
    op.family = op.comm < in.comm_family.size() ? in.comm_family[op.comm] : op.comm;
    comms = std::max<size_t>(comms, size_t(op.comm) + 1);
    for (uint32_t k : index.members_of(i)) {
      const auto& m = rec.members[k];
      if (m.rank < 0) continue;
      if (size_t(m.rank) >= last_op_of.size()) last_op_of.resize(size_t(m.rank) + 1, kNone), ranks = last_op_of.size();
      repeats = repeats || last_op_of[size_t(m.rank)] == ops.size();
      last_op_of[size_t(m.rank)] = uint32_t(ops.size());
      Entry e;
      e.rank = m.rank, e.op = uint32_t(ops.size()), e.arrival = double(m.arrival), e.launch = m.launch, e.window = op.window;
      entries.push_back(e);
    }
    op.count = uint32_t(entries.size()) - op.first;
    ops.push_back(op);
  }
}

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
      const uint32_t at = rs.hint[s];
      if (at == end) continue;
      const bool grouped = grouped_at(k) || grouped_at(rs.chain[at]);
      if (!(peers && !grouped && peers->refuted(list[k].e, list[rs.chain[at]].e)))
        rs.dep_pairs.emplace_back(rs.chain[at], list[k].op);
    }
  }
  for (const auto& at : list)
    if (rs.async[at.comm]) set_launch_dependency(at, rs);
  for (uint32_t s = 0; s < rs.stream.size(); ++s)
    for (uint32_t i = rs.chain_first[s] + 1; i < rs.chain_first[s + 1]; ++i) {
      entries[list[rs.chain[i]].e].prev = list[rs.chain[i - 1]].e;
      rs.dep_pairs.emplace_back(rs.chain[i], list[rs.chain[i - 1]].op);
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
  for (size_t it = next, look = 0; it != 0 && look < 64; ++look) {
    const auto& b = l[order[--it]];
    if (b.end > at.arrival) continue;
    Entry& en = entries[at.e];
    en.ready_op = b.op;
    if (next != order.size() && l[order[next]].launch > b.launch) {
      const double share = double(at.launch - b.launch) / double(l[order[next]].launch - b.launch);
      en.lead = std::clamp(share * (l[order[next]].arrival - b.end), 0.0, at.arrival - b.end);
    }
    return;
  }
}

// Kahn's algorithm over entries (ids [0, E)) and op ends (E + op). Edges follow measured time, so
// there is no cycle unless zero-length ties make one; nodes left over go last, in time order.
// An entry's out-edges (to its op, to its next on the stream) are implicit; only an op's (to the
// entries waiting for it) are listed. Nodes are freed in the order a full edge list gave (by id).
void WhatIfReplay::Model::sort_topologically() {
  const size_t E = entries.size(), N = E + ops.size();
  std::vector<uint32_t> indeg(N, 0), next(E, kNone), first(ops.size() + 1, 0), waiting;
  auto each_wait = [&](auto&& wait) {  // (op, entry waiting for its end), by entry
    for (uint32_t e = 0; e < E; ++e) {
      for (uint32_t d = entries[e].dep_first; d < entries[e].dep_first + entries[e].dep_count; ++d) wait(deps[d], e);
      if (entries[e].ready_op != kNone) wait(entries[e].ready_op, e);
    }
  };
  each_wait([&](uint32_t o, uint32_t e) { ++first[o + 1], ++indeg[e]; });
  for (size_t o = 0; o < ops.size(); ++o) first[o + 1] += first[o], indeg[E + o] = ops[o].count;
  waiting.resize(first.back());
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  each_wait([&](uint32_t o, uint32_t e) { waiting[fill[o]++] = e; });
  for (uint32_t e = 0; e < E; ++e)
    if (entries[e].prev != kNone) next[entries[e].prev] = e, ++indeg[e];
  order.reserve(N);
  for (uint32_t n = 0; n < N; ++n)
    if (!indeg[n]) order.push_back(n);
  auto free_one = [&](uint32_t n) {
    if (--indeg[n] == 0) order.push_back(n);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t n = order[i];
    if (n >= E) {
      for (uint32_t k = first[n - E]; k < first[n - E + 1]; ++k) free_one(waiting[k]);
    } else if (next[n] != kNone && next[n] < n) {
      free_one(next[n]), free_one(uint32_t(E + entries[n].op));
    } else {
      free_one(uint32_t(E + entries[n].op));
      if (next[n] != kNone) free_one(next[n]);
    }
  }
  if (order.size() < N) {
    auto time = [&](uint32_t n) { return n < E ? entries[n].arrival : ops[n - E].end(); };
    std::vector<uint32_t> rest;
    for (uint32_t n = 0; n < N; ++n)
      if (indeg[n]) rest.push_back(n);
    std::sort(rest.begin(), rest.end(), [&](uint32_t a, uint32_t b) { return time(a) < time(b); });
    order.insert(order.end(), rest.begin(), rest.end());
  }
}

// The order as steps (then neither it nor deps is needed).
void WhatIfReplay::Model::compile() {
  const size_t E = entries.size();
  std::vector<uint32_t> step_of(order.size());
  for (uint32_t p = 0; p < order.size(); ++p) step_of[order[p]] = p;
  steps.reserve(order.size()), preds.reserve(E + deps.size() + E);
  for (const uint32_t n : order) {
    Step s;
    s.node = n;
    if (n >= E) {
      const OpNode& op = ops[n - E];
      for (uint32_t i = op.first; i < op.first + op.count; ++i) preds.push_back(step_of[i]);
      s.value = op.transfer, s.who = op.comm, s.kind = uint8_t(kOpStep | (op.window ? kWindowStep : 0));
    } else {
      const Entry& en = entries[n];
      if (en.prev != kNone) preds.push_back(step_of[en.prev]);
      for (uint32_t d = en.dep_first; d < en.dep_first + en.dep_count; ++d) preds.push_back(step_of[E + deps[d]]);
      if (en.ready_op != kNone) readies.emplace_back(step_of[E + en.ready_op], en.lead);
      s.value = en.fixed ? en.arrival : en.gap, s.who = uint32_t(en.rank);
      s.kind = uint8_t((en.fixed ? kFixedStep : 0) | (en.window ? kWindowStep : 0) | (en.ready_op != kNone ? kReadyStep : 0));
    }
    s.preds_end = uint32_t(preds.size());
    steps.push_back(s);
  }
  std::vector<uint32_t>().swap(order), std::vector<uint32_t>().swap(deps);
}

// Each entry's role peers: the gaps of the entries with its peer key (fixed ones left out, but
// given their key's group). Each op's like: the ops of its family and position. Each stage's work,
// and each rank's scale when the stages are balanced.
void WhatIfReplay::Model::build_tables(const WhatIfInputs& in) {
  KeyIds like_ids;
  peer_first = group_offsets(entries.size(), peer_groups, [&](size_t e) { return entries[e].peers; },
                             [&](size_t e) { return !entries[e].fixed; });
  peer_gaps.resize(peer_first.back()), peer_leads.resize(peer_first.back());
  std::vector<uint32_t> fill(peer_first.begin(), peer_first.end() - 1);
  for (const auto& e : entries)
    if (!e.fixed) {
      peer_leads[fill[e.peers]] = {e.lead, e.ready_op != kNone ? uint32_t(e.rank) : kNone};
      peer_gaps[fill[e.peers]++] = {e.gap, uint32_t(e.rank)};
    }
  // The family of the op's first member's op: its own (an op without members, never seen, takes
  // the next op's, as it always did).
  for (auto& op : ops)
    op.like = like_ids({op.count || op.first >= entries.size() ? op.family : ops[entries[op.first].op].family, op.seq, 0});
  like_first = group_offsets(ops.size(), like_ids.size(), [&](size_t o) { return ops[o].like; }, kAll);
  likes.resize(ops.size());
  fill.assign(like_first.begin(), like_first.end() - 1);
  for (const auto& op : ops) likes[fill[op.like]++] = {op.transfer, op.comm};
  std::vector<double> work_of_rank(ranks, 0.0);  // summed in entry order
  std::vector<uint8_t> seen(ranks, 0);
  for (const auto& e : entries) work_of_rank[size_t(e.rank)] += e.gap, seen[size_t(e.rank)] = 1;
  // Compute time where given for every rank replayed (gaps hold idle time and waits on other
  // streams too), else the gaps.
  bool given = true;
  for (size_t r = 0; r < ranks; ++r) given = given && (!seen[r] || (r < in.work.size() && in.work[r] > 0));
  std::map<int32_t, std::vector<double>> by_stage;
  for (size_t r = 0; r < ranks; ++r)
    if (seen[r]) by_stage[role_of(int32_t(r))].push_back(given ? in.work[r] : work_of_rank[r]);
  for (auto& [s, v] : by_stage) stage_work[s] = common::median(v);
  double mean_work = 0;
  for (const auto& [s, w] : stage_work) mean_work += w / double(stage_work.size());
  stage_scale.assign(ranks, 1.0);
  for (size_t r = 0; r < ranks; ++r) {
    const auto it = stage_work.find(role_of(int32_t(r)));
    if (it != stage_work.end() && it->second > 0) stage_scale[r] = mean_work / it->second;
  }
  start = 1e300;
  double end = -1e300;
  for (const auto& e : entries)
    if (e.window) start = std::min(start, e.arrival);
  for (const auto& o : ops)
    if (o.window) end = std::max(end, o.end());
  makespan = end > start ? end - start : 0;
}

// An op's end: the last (replayed) arrival plus its transfer; where a member's own link or the
// op's communicator is fixed, at most the median transfer of its like (the same position on the
// family's other communicators) leaving out the communicators being fixed (a slow link's own are
// no measure of a healthy one: two slow of four would put the median halfway) and, for a rank's
// own slow link, the op's own communicator too; the op's own transfer when no like is left.
double WhatIfReplay::Model::op_end(const Step& s, const double* t, const uint32_t* pred, const Run& run) const {
  const OpNode& op = ops[s.node - entries.size()];
  double last = -1e300, transfer = s.value;
  bool by_rank = false;  // a member's own link is slow
  for (uint32_t i = 0; i < op.count; ++i) last = std::max(last, t[pred[i]]);
  for (uint32_t i = op.first; run.any_link && i < op.first + op.count; ++i)
    by_rank = by_rank || run.link[size_t(entries[i].rank)];
  if (run.change && run.change->hide_communication) transfer = 0;
  if (by_rank || run.comm[s.who]) {
    const auto kept = [&](uint32_t comm) { return !(by_rank && comm == op.comm) && !run.comm[comm]; };
    transfer = std::min(transfer, kept_median(group(likes, like_first, op.like), kept, op.transfer, run.buf));
  }
  return last + transfer;
}

double WhatIfReplay::Model::run(const WhatIfChange* change) const {
  Run r;
  r.change = change, r.fixed.assign(ranks, 0), r.link.assign(ranks, 0), r.comm.assign(comms, 0);
  if (change) {  // ranks and communicators not replayed have nothing to change
    for (int32_t k : change->ranks)
      if (k >= 0 && size_t(k) < ranks) r.fixed[size_t(k)] = 1, r.any_fixed = true;
    for (int32_t k : change->links)
      if (k >= 0 && size_t(k) < ranks) r.link[size_t(k)] = 1, r.any_link = true;
    for (uint32_t c : change->comms)
      if (c < comms) r.comm[c] = 1;
  }
  const bool balance = change && change->balance_stages;
  std::vector<double> t(steps.size(), 0);  // by step
  double first = 1e300, end = -1e300;  // over the window (the lead-in only holds it up)
  size_t ready_k = 0;                   // the next of readies
  for (uint32_t p = 0, from = 0; p < steps.size(); from = steps[p++].preds_end) {
    const Step& s = steps[p];
    if (s.kind & kOpStep) {
      t[p] = op_end(s, t.data(), preds.data() + from, r);
      if (s.kind & kWindowStep) end = std::max(end, t[p]);
      continue;
    }
    if (s.kind & kFixedStep) {
      t[p] = s.value;
      if (s.kind & kWindowStep) first = std::min(first, t[p]);
      continue;
    }
    double ready = -1e300, gap = s.value;  // the latest of the prev, the deps and the ready op (+ lead)
    for (uint32_t i = from; i < s.preds_end; ++i) ready = std::max(ready, t[preds[i]]);
    if (s.kind & kReadyStep) {
      // A fixed rank's compute before the launch is at its peers' median too (the lead is its work).
      double lead = readies[ready_k].second;
      if (r.any_fixed && r.fixed[s.who]) {
        const auto kept = [&](uint32_t rank) { return rank != kNone && !r.fixed[rank]; };
        lead = std::min(lead, kept_median(group(peer_leads, peer_first, entries[s.node].peers), kept, lead, r.buf));
      }
      ready = std::max(ready, t[readies[ready_k].first] + lead), ++ready_k;
    }
    // At its role peers' median at the same point (the fixed ranks left out; its own gap where no
    // peer has that point), never slower than it was: a peer's gap may be measured from another
    // dependency than the rank's own (the order of near-simultaneous events differs).
    if (r.any_fixed && r.fixed[s.who]) {
      const Entry& en = entries[s.node];
      const auto kept = [&](uint32_t rank) { return !r.fixed[rank]; };
      gap = std::min(gap, kept_median(group(peer_gaps, peer_first, en.peers), kept, en.gap, r.buf));
    }
    if (balance) gap *= stage_scale[s.who];
    t[p] = ready + gap;
    if (s.kind & kWindowStep) first = std::min(first, t[p]);
  }
  return end > first ? end - first : 0;
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
