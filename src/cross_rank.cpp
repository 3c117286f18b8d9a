#include "cross_rank.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "exchange.hpp"
#include "timings.hpp"

namespace straggler {
namespace c = collectives;

CrossRankInput make_cross_input(const ranks::RankTimeline& tl, const std::vector<ranks::Iteration>& its) {
  CrossRankInput in;
  in.host = tl.host;
  const auto ops = c::extract_ops(tl, its, -1);
  in.pending = c::pending_ops(tl, ops, its);
  in.summaries = summarize_streams(ops);
  in.streams = encode_streams(ops);
  in.capture_end = tl.utc_epoch_ns + tl.capture_end;
  for (const auto& p : tl.pending_nccl) in.stuck |= tl.capture_end - p.launch >= c::kMinHangMarginNs;
  in.work = ranks::iteration_work(tl, its);
  for (const auto& it : its) in.iteration_number.push_back(it.number), in.step_ms.push_back(double(it.step_ns) / 1e6);
  return in;
}

void set_cross_rank(CrossRankInput& in, int rank) {
  in.rank = rank;
  for (auto& s : in.summaries) s.rank = rank;
}

struct OwnedMember {
  int64_t capture_end = 0;
  bool pending_next = false;
  int64_t pending_launch = 0;
  uint32_t ops = 0;
  std::string bytes;  // encode_streams' encoding of its ops on the communicator's stream
};
struct OwnedComms {
  std::map<uint32_t, std::vector<OwnedMember>> members;  // by communicator index, in member order
};

namespace {

// Stream summaries of the local ranks, with the clock domain: ranks of one host share its clock
// (the host name, else the file they came from).
std::vector<c::StreamSummary> summarize(const std::vector<CrossRankInput>& local) {
  std::vector<c::StreamSummary> out;
  for (const auto& in : local)
    for (auto s : in.summaries) {
      s.clock_domain = in.host.empty() ? uint64_t(in.clock_domain + 2) : std::hash<std::string>{}(in.host) | 1u;
      out.push_back(std::move(s));
    }
  return out;
}

std::string pack(const std::vector<c::StreamSummary>& v) {
  ByteWriter w;
  for (const auto& s : v) {
    w.pod(s.rank), w.pod(s.stream), w.pod(s.ops), w.pod(s.type_prefix_hash), w.pod(s.first_type);
    w.pod(s.ops_per_iteration), w.pod(s.clock_domain);
    w.pod<uint64_t>(s.first_ends.size());
    for (auto e : s.first_ends) w.pod(e);
  }
  return w.bytes();
}

void unpack(const std::string& blob, std::vector<c::StreamSummary>& out) {
  ByteReader r(blob);
  while (!r.done()) {
    c::StreamSummary s;
    s.rank = r.pod<int32_t>(), s.stream = r.pod<int32_t>(), s.ops = r.pod<uint32_t>();
    s.type_prefix_hash = r.pod<uint64_t>(), s.first_type = r.pod<c::CollectiveType>();
    s.ops_per_iteration = r.pod<uint32_t>(), s.clock_domain = r.pod<uint64_t>();
    s.first_ends.resize(r.pod<uint64_t>());
    for (auto& e : s.first_ends) e = r.pod<int64_t>();
    out.push_back(std::move(s));
  }
}

// --- ops to their communicator's owner ---------------------------------------------------
void put_member(ByteWriter& w, uint32_t comm, uint32_t member, const CrossRankInput& in, const StreamRecords& s) {
  w.pod(comm), w.pod(member), w.pod(in.capture_end);
  uint8_t pending = 0;
  int64_t pending_launch = 0;
  for (const auto& p : in.pending)
    if (p.stream == s.stream && p.seq == s.ops) pending = 1, pending_launch = p.launch;
  w.pod(pending), w.pod(pending_launch), w.pod(s.ops), w.str(s.bytes);
}

void get_member(ByteReader& r, const std::vector<CommSummary>& comms, OwnedComms& owned) {
  const auto ci = r.pod<uint32_t>(), mi = r.pod<uint32_t>();
  auto& members = owned.members[ci];
  members.resize(comms.at(ci).ranks.size());
  auto& m = members.at(mi);
  m.capture_end = r.pod<int64_t>();
  m.pending_next = r.pod<uint8_t>() != 0;
  m.pending_launch = r.pod<int64_t>();
  m.ops = r.pod<uint32_t>();
  m.bytes = r.str();
}

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

// A p2p link whose member streams also serve another link keeps the ops whose ends coincide
// (each send has one receiver). A member's pending launch stays when it is this link's.
void keep_linked_ops(std::vector<c::MemberOps>& m, int64_t offset_ns, int64_t tolerance_ns) {
  if (m.size() != 2) return;
  std::vector<int64_t> ea, eb;
  for (const auto& op : m[0].ops) ea.push_back(op.end);
  for (const auto& op : m[1].ops) eb.push_back(op.end);
  const auto pairs = c::match_link_ops(ea, eb, offset_ns, tolerance_ns);
  for (int side = 0; side < 2; ++side) {
    auto& mem = m[size_t(side)];
    if (pairs.size() == mem.ops.size()) continue;
    std::vector<uint8_t> on_link(mem.ops.size(), 0);
    std::vector<c::CollectiveOp> kept;
    for (const auto& p : pairs) {
      const uint32_t i = side == 0 ? p.first : p.second;
      kept.push_back(mem.ops[i]), on_link[i] = 1;
    }
    for (uint32_t k = 0; k < kept.size(); ++k) kept[k].seq = k;
    mem.ops = std::move(kept);
    if (mem.pending_next && !next_on_link(on_link)) mem.pending_next = false, mem.pending_launch = 0;
  }
}

// Frees a stream's encoding (assigning an empty string would keep its buffer: libstdc++ copies a
// short string into the existing allocation).
void release(StreamRecords& s) { std::string().swap(s.bytes); }

// A communicator's member ops as the replay takes them.
std::vector<c::MemberOps> decode(const CommSummary& cs, const std::vector<OwnedMember>& owned) {
  std::vector<c::MemberOps> m(owned.size());
  for (size_t i = 0; i < owned.size(); ++i) {
    m[i].rank = cs.ranks.at(i), m[i].capture_end = owned[i].capture_end;
    m[i].pending_next = owned[i].pending_next, m[i].pending_launch = owned[i].pending_launch;
    m[i].ops = decode_stream(owned[i].bytes, owned[i].ops, m[i].rank);
  }
  if (cs.p2p && cs.shared) keep_linked_ops(m, cs.link_offset_ns, cs.link_tolerance_ns);
  return m;
}

// --- clock edges -------------------------------------------------------------------------
std::string pack_edges(const std::vector<c::ClockEdge>& v) {
  ByteWriter w;
  for (const auto& e : v) w.pod(e);
  return w.bytes();
}

// --- evidence ------------------------------------------------------------------------------
void put_vec(ByteWriter& w, const std::vector<double>& v) {
  w.pod<uint64_t>(v.size());
  for (double x : v) w.pod(x);
}
std::vector<double> get_vec(ByteReader& r) {
  std::vector<double> v(r.pod<uint64_t>());
  for (auto& x : v) x = r.pod<double>();
  return v;
}

void put_evidence(ByteWriter& w, const c::RankEvidence& e) {
  w.pod(e.rank), w.str(e.host), w.pod(e.role), w.pod(e.ops), w.pod(e.late), w.pod(e.wait_ns), w.pod(e.blame_ns);
  w.pod(e.hold_ns), w.pod(e.transfer_ns);
  put_vec(w, e.blame_by_iteration), put_vec(w, e.wait_by_iteration), put_vec(w, e.step_ms), put_vec(w, e.compute_ms), put_vec(w, e.kernels);
  put_vec(w, e.idle_ms);
  w.pod<uint64_t>(e.iteration_number.size());
  for (auto n : e.iteration_number) w.pod(n);
  w.pod<uint64_t>(e.top_names.size());
  for (size_t i = 0; i < e.top_names.size(); ++i) w.str(e.top_names[i]), put_vec(w, e.name_ns[i]), put_vec(w, e.name_count[i]);
}

c::RankEvidence get_evidence(ByteReader& r) {
  c::RankEvidence e;
  e.rank = r.pod<int>(), e.host = r.str(), e.role = r.pod<int>(), e.ops = r.pod<double>(), e.late = r.pod<double>();
  e.wait_ns = r.pod<double>(), e.blame_ns = r.pod<double>(), e.hold_ns = r.pod<double>(), e.transfer_ns = r.pod<double>();
  e.blame_by_iteration = get_vec(r), e.wait_by_iteration = get_vec(r), e.step_ms = get_vec(r), e.compute_ms = get_vec(r), e.kernels = get_vec(r);
  e.idle_ms = get_vec(r);
  e.iteration_number.resize(r.pod<uint64_t>());
  for (auto& n : e.iteration_number) n = r.pod<int64_t>();
  e.top_names.resize(r.pod<uint64_t>());
  for (auto& name : e.top_names) {
    name = r.str();
    e.name_ns.push_back(get_vec(r));
    e.name_count.push_back(get_vec(r));
  }
  return e;
}

void allreduce_sum(Transport& t, std::vector<double>& v) { t.allreduce(std::span<double>(v), Transport::Op::Sum); }

// Bytes of member records a process packs for one exchange round: bounds the round's buffers
// (sender and receiver each hold a few copies) whatever the job's size.
constexpr size_t kRoundBytes = size_t(16) << 20;

int64_t sent(const std::string& s) { return int64_t(s.size()); }


double max_offset(const c::ClockSolution& cs, const std::vector<c::StreamSummary>& streams) {
  double m = 0;
  for (const auto& s : streams) m = std::max(m, std::abs(cs.offset_ns[size_t(s.rank)]));
  return m;
}

}  // namespace

CrossRankResults run_cross_rank(Transport& t, std::vector<CrossRankInput>& local, int world,
                                const std::optional<topology::ParallelLayout>& layout_given, bool clock_correction) {
  const int me = t.rank(), nproc = t.size();
  CrossRankResults res;

  // 1. Communicators, identically everywhere.
  std::vector<c::StreamSummary> streams;
  const std::string mine = pack(summarize(local));
  res.bytes_exchanged += sent(mine) * (nproc - 1);
  for (const auto& blob : t.allgather(mine)) unpack(blob, streams);
  timings().mark("exchange stream summaries");
  const auto inference = c::infer_communicators(streams, layout_given);
  timings().mark("infer communicators");
  const auto& comms = inference.comms;
  res.layout = inference.layout;
  const std::optional<topology::ParallelLayout> layout = res.layout.layout;
  // (rank, stream) -> (comm, member)
  std::multimap<std::pair<int32_t, int32_t>, std::pair<uint32_t, uint32_t>> where;
  for (size_t ci = 0; ci < comms.size(); ++ci) {
    CommSummary s;
    s.name = comms[ci].name, s.type = comms[ci].type, s.owner = int32_t(ci % size_t(nproc));
    s.p2p = comms[ci].p2p, s.by_layout_rule = comms[ci].by_layout_rule, s.shared = comms[ci].shared;
    s.link_offset_ns = comms[ci].link_offset_ns, s.link_tolerance_ns = comms[ci].link_tolerance_ns;
    for (size_t m = 0; m < comms[ci].members.size(); ++m) {
      s.ranks.push_back(comms[ci].members[m].rank);
      s.member_ops.push_back(comms[ci].members[m].ops);
      where.insert({{comms[ci].members[m].rank, comms[ci].members[m].stream}, {uint32_t(ci), uint32_t(m)}});
    }
    res.comms.push_back(std::move(s));
  }

  // 2. Each member's records go to the owner of its communicator, in rounds of bounded size; a
  // stream's encoding is freed once packed for its last communicator.
  struct Send {
    size_t in, stream;
    uint32_t comm, member;
    bool last;
  };
  std::vector<Send> sends;
  for (size_t i = 0; i < local.size(); ++i)
    for (size_t k = 0; k < local[i].streams.size(); ++k) {
      auto [lo, hi] = where.equal_range({local[i].rank, local[i].streams[k].stream});
      for (auto it = lo; it != hi; ++it) sends.push_back({i, k, it->second.first, it->second.second, std::next(it) == hi});
      if (lo == hi) release(local[i].streams[k]);  // in no communicator
    }
  auto owned = std::make_shared<OwnedComms>();
  for (size_t next = 0;;) {
    std::vector<ByteWriter> to(static_cast<size_t>(nproc));
    for (size_t packed = 0; next < sends.size() && packed < kRoundBytes; ++next) {
      const Send& x = sends[next];
      auto& w = to[size_t(res.comms[x.comm].owner)];
      const size_t before = w.bytes().size();
      put_member(w, x.comm, x.member, local[x.in], local[x.in].streams[x.stream]);
      packed += w.bytes().size() - before;
      if (x.last) release(local[x.in].streams[x.stream]);
    }
    std::vector<std::string> blobs;
    for (int p = 0; p < nproc; ++p) {
      blobs.push_back(to[size_t(p)].bytes());
      if (p != me) res.bytes_exchanged += sent(blobs.back());
    }
    to.clear();
    for (const auto& blob : t.alltoall(blobs)) {
      ByteReader r(blob);
      while (!r.done()) get_member(r, res.comms, *owned);
    }
    if (t.reduce<int64_t>(next < sends.size(), Transport::Op::Max) == 0) break;
  }
  res.owned = owned;
  timings().mark("ship op records to owners");

  // 3. Clock edges from the owners, solved identically everywhere.
  std::vector<c::ClockEdge> edges;
  for (const auto& [ci, members] : owned->members)
    for (const auto& e : c::comm_clock_edges(decode(res.comms[ci], members))) edges.push_back(e);
  // Ranks captured in one file share its clock: tie them with an edge that outweighs any estimate.
  std::map<int64_t, int32_t> first_of_domain;
  for (const auto& in : local) {
    auto [it, fresh] = first_of_domain.try_emplace(in.clock_domain, in.rank);
    if (!fresh) {
      c::ClockEdge tie;
      tie.a = in.rank, tie.b = it->second, tie.ops = c::kTieOps, tie.spread_ns = 0, tie.t_ref_ns = double(in.capture_end);
      edges.push_back(tie);
    }
  }
  const std::string my_edges = pack_edges(edges);
  res.bytes_exchanged += sent(my_edges) * (nproc - 1);
  edges.clear();
  for (const auto& blob : t.allgather(my_edges)) {
    ByteReader r(blob);
    while (!r.done()) edges.push_back(r.pod<c::ClockEdge>());
  }
  std::sort(edges.begin(), edges.end(), [](auto& a, auto& b) { return std::tie(a.a, a.b) < std::tie(b.a, b.b); });
  int64_t reference = world;
  for (const auto& in : streams) reference = std::min<int64_t>(reference, in.rank);
  reference = t.reduce(reference, Transport::Op::Min);
  size_t distrusted = 0;
  const std::vector<c::ClockEdge> trusted = c::trusted_edges(edges, &distrusted);
  res.clocks = c::solve_clocks(world, clock_correction ? trusted : std::vector<c::ClockEdge>{},
                               reference < world ? int(reference) : 0);
  timings().mark("align clocks");
  // 4. Replay owned communicators; per-rank sums over all processes. The per-op results are
  // dropped here (replay_owned recomputes them for the writer).
  std::vector<double> comm_stats(res.comms.size() * 5, 0.0);  // matched, median transfer, mismatch, viol before/after
  std::vector<DesyncRow> my_desync, my_ended;
  auto replay_all = [&] {
    res.acc = c::RankAccumulator(world);
    std::fill(comm_stats.begin(), comm_stats.end(), 0.0);
    my_desync.clear(), my_ended.clear();
    for (const auto& [ci, members] : owned->members) {
      const auto replay = c::replay_communicator(decode(res.comms[ci], members), res.clocks, res.acc);
      comm_stats[ci * 5 + 0] = double(replay.ops.size());
      comm_stats[ci * 5 + 1] = replay.median_transfer_ns;
      comm_stats[ci * 5 + 2] = double(replay.mismatch_seq + 1);
      comm_stats[ci * 5 + 3] = double(replay.clock_violations_before);
      comm_stats[ci * 5 + 4] = double(replay.clock_violations_after);
      res.comms[ci].mismatch = replay.mismatch;
      for (const auto& d : replay.desync)
        my_desync.push_back({res.comms[ci].name, d.type, int64_t(d.seq), d.missing_ranks, d.blocked_ranks, false, -1, d.iteration});
      for (const auto& d : replay.capture_ended)
        my_ended.push_back({res.comms[ci].name, d.type, int64_t(d.seq), d.missing_ranks, d.blocked_ranks, false, -1, d.iteration});
    }
    allreduce_sum(t, comm_stats);  // the same sums on every process: they decide alike below
  };
  replay_all();
  // A correction that makes the clock condition worse (more ops ending before their last member
  // arrived) is wrong somewhere: never apply it. The replay counted both; replay again only then.
  if (clock_correction) {
    int64_t before = 0, after = 0;
    for (size_t ci = 0; ci < res.comms.size(); ++ci)
      before += int64_t(comm_stats[ci * 5 + 3]), after += int64_t(comm_stats[ci * 5 + 4]);
    if (after > before) {
      res.clock.rejected = fmt::format("the fitted correction (max offset {:.3f} ms) would raise clock-condition "
                                       "violations from {} to {}; clocks left as recorded",
                                       max_offset(res.clocks, streams) / 1e6, before, after);
      res.clocks = c::solve_clocks(world, {}, reference < world ? int(reference) : 0);
      replay_all();
    }
  }
  if (distrusted) res.clock.distrusted_edges = int64_t(distrusted);
  std::vector<double> spreads;
  for (const auto& e : edges)
    if (e.ops < c::kTieOps) spreads.push_back(e.spread_ns);  // measured edges, not same-file ties
  std::sort(spreads.begin(), spreads.end());
  res.clock.residual_ns = spreads.empty() ? 0 : spreads[spreads.size() / 2];
  std::set<int32_t> present;
  for (const auto& s : streams) present.insert(s.rank);
  for (int32_t r : present) {
    res.clock.max_offset_ns = std::max(res.clock.max_offset_ns, std::abs(res.clocks.offset_ns[size_t(r)]));
    res.clock.unaligned_ranks += !res.clocks.aligned[size_t(r)];
  }

  for (size_t ci = 0; ci < res.comms.size(); ++ci) {
    auto& s = res.comms[ci];
    s.matched_ops = int64_t(comm_stats[ci * 5]), s.median_transfer_ns = comm_stats[ci * 5 + 1];
    s.mismatch_seq = int64_t(comm_stats[ci * 5 + 2]) - 1;
    res.clock.violations_before += int64_t(comm_stats[ci * 5 + 3]);
    res.clock.violations_after += int64_t(comm_stats[ci * 5 + 4]);
    res.clock.ops += s.matched_ops;
  }
  {  // mismatch texts and desync rows travel as strings
    ByteWriter w;
    for (const auto& [ci, members] : owned->members) w.pod<uint64_t>(ci), w.str(res.comms[ci].mismatch);
    w.pod<uint64_t>(UINT64_MAX);
    for (const auto* rows : {&my_desync, &my_ended})
      for (const auto& d : *rows) {
        w.pod<uint8_t>(rows == &my_ended);
        w.str(d.communicator), w.pod(d.type), w.pod(d.seq), w.pod(d.iteration), w.pod<uint64_t>(d.missing_ranks.size());
        for (auto r : d.missing_ranks) w.pod(r);
        w.pod<uint64_t>(d.blocked_ranks.size());
        for (auto r : d.blocked_ranks) w.pod(r);
      }
    res.bytes_exchanged += sent(w.bytes()) * (nproc - 1);
    for (const auto& blob : t.allgather(w.bytes())) {
      ByteReader r(blob);
      for (uint64_t ci; (ci = r.pod<uint64_t>()) != UINT64_MAX;) res.comms[ci].mismatch = r.str();
      while (!r.done()) {
        const bool ended = r.pod<uint8_t>() != 0;
        DesyncRow d;
        d.communicator = r.str(), d.type = r.pod<c::CollectiveType>(), d.seq = r.pod<int64_t>();
        d.iteration = r.pod<int32_t>();
        d.missing_ranks.resize(r.pod<uint64_t>());
        for (auto& x : d.missing_ranks) x = r.pod<int32_t>();
        d.blocked_ranks.resize(r.pod<uint64_t>());
        for (auto& x : d.blocked_ranks) x = r.pod<int32_t>();
        (ended ? res.capture_ended : res.desync).push_back(std::move(d));
      }
    }
  }
  // A missing rank that is blocked in no other collective stopped by itself: the root cause. One
  // blocked in another communicator's pending op is a victim of the hang upstream of it.
  std::set<int32_t> blocked;
  for (const auto* rows : {&res.desync, &res.capture_ended})
    for (const auto& d : *rows) blocked.insert(d.blocked_ranks.begin(), d.blocked_ranks.end());
  {  // and ranks stuck in a launch no communicator could be matched to
    std::vector<int64_t> stuck(size_t(world), 0);
    for (const auto& in : local) stuck[size_t(in.rank)] = in.stuck;
    t.allreduce(std::span<int64_t>(stuck), Transport::Op::Max);
    for (int r = 0; r < world; ++r)
      if (stuck[size_t(r)]) blocked.insert(r);
  }
  for (auto& d : res.desync)
    d.root_cause = std::any_of(d.missing_ranks.begin(), d.missing_ranks.end(), [&](int32_t r) { return !blocked.count(r); });
  for (auto* rows : {&res.desync, &res.capture_ended})
    std::sort(rows->begin(), rows->end(), [](auto& a, auto& b) { return a.communicator < b.communicator; });
  // Pipeline links "pp-N:s-t": the op's number in the group's p2p sequence of the (first) missing
  // rank = the p2p ops it issued on all links of pp-N (completed, plus one where it waits).
  for (auto& d : res.desync) {
    const auto colon = d.communicator.find(':');
    if (colon == std::string::npos || d.missing_ranks.empty()) continue;
    const std::string group = d.communicator.substr(0, colon + 1);
    const int32_t r = d.missing_ranks.front();
    d.group_seq = 0;
    std::set<int32_t> counted;  // a stream serving both links of the group counts once
    for (size_t ci = 0; ci < res.comms.size(); ++ci) {
      const auto& c = res.comms[ci];
      if (c.name.rfind(group, 0) != 0) continue;
      for (size_t m = 0; m < c.ranks.size(); ++m)
        if (c.ranks[m] == r && counted.insert(comms[ci].members[m].stream).second) d.group_seq += c.member_ops[m];
      for (const auto& e : res.desync)
        if (e.communicator == c.name && std::count(e.blocked_ranks.begin(), e.blocked_ranks.end(), r)) d.group_seq += 1;
    }
  }

  auto& acc = res.acc;
  for (auto* v : {&acc.ops, &acc.late, &acc.wait_ns, &acc.blame_ns, &acc.hold_ns, &acc.transfer_ns}) allreduce_sum(t, *v);
  for (auto* h : {&acc.wait_hist, &acc.skew_hist, &acc.transfer_hist})  // exact merge: sum of counts
    t.allreduce(std::span<uint64_t>(h->counts.data(), h->counts.size()), Transport::Op::Sum);
  int64_t max_iter = 0;
  for (const auto& b : acc.blame_by_iteration) max_iter = std::max(max_iter, int64_t(b.size()));
  for (const auto& b : acc.wait_by_iteration) max_iter = std::max(max_iter, int64_t(b.size()));
  for (const auto& in : local) max_iter = std::max(max_iter, int64_t(in.step_ms.size()));
  max_iter = t.reduce(max_iter, Transport::Op::Max);
  for (auto* series : {&acc.blame_by_iteration, &acc.wait_by_iteration}) {  // rank x iteration, summed
    std::vector<double> flat(size_t(world) * size_t(max_iter), 0.0);
    for (size_t r = 0; r < series->size(); ++r)
      for (size_t i = 0; i < (*series)[r].size(); ++i) flat[r * size_t(max_iter) + i] = (*series)[r][i];
    allreduce_sum(t, flat);
    for (size_t r = 0; r < size_t(world); ++r)
      (*series)[r].assign(flat.begin() + long(r * size_t(max_iter)), flat.begin() + long((r + 1) * size_t(max_iter)));
  }

  timings().mark("replay and sums");
  // 5. Evidence of every rank to every process; the verdict is computed identically everywhere.
  ByteWriter w;
  for (const auto& in : local) {
    c::RankEvidence e;
    const size_t r = size_t(in.rank);
    e.rank = in.rank, e.host = in.host, e.role = layout && in.rank < layout->world() ? layout->pp_rank(in.rank) : 0;
    e.ops = acc.ops[r], e.late = acc.late[r], e.wait_ns = acc.wait_ns[r], e.blame_ns = acc.blame_ns[r];
    e.hold_ns = acc.hold_ns[r], e.transfer_ns = acc.transfer_ns[r], e.blame_by_iteration = acc.blame_by_iteration[r];
    e.wait_by_iteration = acc.wait_by_iteration[r];
    e.iteration_number = in.iteration_number, e.step_ms = in.step_ms;
    for (double x : in.work.compute_ns) e.compute_ms.push_back(x / 1e6);
    for (double x : in.work.idle_ns) e.idle_ms.push_back(x / 1e6);
    e.kernels = in.work.kernels, e.top_names = in.work.top_names, e.name_ns = in.work.name_ns, e.name_count = in.work.name_count;
    put_evidence(w, e);
  }
  res.bytes_exchanged += sent(w.bytes()) * (nproc - 1);
  std::vector<c::RankEvidence> evidence;
  for (const auto& blob : t.allgather(w.bytes())) {
    ByteReader r(blob);
    while (!r.done()) evidence.push_back(get_evidence(r));
  }
  std::sort(evidence.begin(), evidence.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  std::map<int32_t, std::set<std::string>> hosts_of_rank;
  for (const auto& e : evidence) hosts_of_rank[e.rank].insert(e.host);
  std::vector<c::CommEvidence> ce;
  for (size_t ci = 0; ci < res.comms.size(); ++ci) {
    c::CommEvidence x;
    x.name = res.comms[ci].name, x.type = res.comms[ci].type, x.family = comms[ci].family;
    x.median_transfer_ns = res.comms[ci].median_transfer_ns, x.ops = res.comms[ci].matched_ops;
    std::set<std::string> hosts;
    for (auto r : res.comms[ci].ranks) {
      x.ranks.push_back(r);
      for (const auto& h : hosts_of_rank[r]) hosts.insert(h);
    }
    x.hosts.assign(hosts.begin(), hosts.end());
    ce.push_back(std::move(x));
  }
  // Stragglers are judged only on iterations before the first desync: from there on the members
  // that reached an op wait for ones that never come, which no one is to blame for as a straggler.
  size_t clean = SIZE_MAX;
  for (const auto& d : res.desync)
    if (d.iteration >= 0) clean = std::min(clean, size_t(d.iteration));
  res.verdict = c::decide(evidence, ce, clean);
  res.bytes_exchanged_total = t.reduce(res.bytes_exchanged, Transport::Op::Sum);
  timings().mark("evidence and verdict");
  for (const auto& e : evidence) {
    res.evidence_ranks.push_back(e.rank);
    res.step_ms.push_back(e.step_ms);
    res.iteration_number.push_back(e.iteration_number);
  }
  return res;
}

void replay_owned(const CrossRankResults& x, const std::function<void(size_t, const c::CommReplay&)>& fn) {
  if (!x.owned) return;
  c::RankAccumulator scratch(int(x.clocks.offset_ns.size()));  // the sums were taken in run_cross_rank
  for (const auto& [ci, members] : x.owned->members) {
    const auto replay = c::replay_communicator(decode(x.comms[ci], members), x.clocks, scratch);
    if (int64_t(replay.ops.size()) != x.comms[ci].matched_ops)
      throw std::logic_error("replay of " + x.comms[ci].name + " differs from the analysis");
    fn(ci, replay);
  }
}

}  // namespace straggler
