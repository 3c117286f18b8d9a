// Stages 4-7 of the cross-rank run (cross_stages.hpp): replay, desync, sums, verdict.
#include <algorithm>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>

#include "collectives/root_causes.hpp"
#include "cross_stages.hpp"
#include "exchange.hpp"

namespace straggler {
namespace c = collectives;

template <>
struct Wire<DesyncRow> {
  static void fields(auto& ar, auto& d) {
    ar(d.communicator, d.comm, d.type, d.seq, d.missing_ranks, d.blocked_ranks, d.root_cause, d.group_seq, d.iteration, d.crashed_ranks);
    ar(d.stopped_in_launch);
  }
};
template <>
struct Wire<CommText> {
  static void fields(auto& ar, auto& t) { ar(t.comm, t.text); }
};
template <>
struct Wire<IterTransfer> {
  static void fields(auto& ar, auto& t) { ar(t.comm, t.iteration, t.median_ns); }
};
template <>
struct Wire<ReplayNotes> {
  static void fields(auto& ar, auto& n) { ar(n.mismatch, n.desync, n.capture_ended, n.transfers); }
};
template <>
struct Wire<ranks::RankFinding> {
  static void fields(auto& ar, auto& f) { ar(f.rank, f.finding, f.severity, f.cost_ms_per_step, f.evidence, f.unit); }
};
template <>
struct Wire<c::RankEvidence> {
  static void fields(auto& ar, auto& e) {
    ar(e.rank, e.host, e.role, e.ops, e.late, e.wait_ns, e.blame_ns, e.hold_ns, e.transfer_ns);
    ar(e.blame_by_iteration, e.wait_by_iteration, e.iteration_number, e.step_ms, e.compute_ms, e.kernels, e.idle_ms, e.comm_ms);
    ar(e.top_names, e.name_ns, e.name_count, e.findings);
  }
};

namespace {

void allreduce_sum(Transport& t, std::vector<double>& v) { t.allreduce(std::span<double>(v), Transport::Op::Sum); }

DesyncRow row_of(const CommSummary& cs, uint32_t ci, const c::Desync& d) {
  DesyncRow r;
  r.communicator = cs.name, r.comm = int32_t(ci), r.type = d.type, r.seq = int64_t(d.seq);
  r.missing_ranks = d.missing_ranks, r.blocked_ranks = d.blocked_ranks, r.iteration = d.iteration;
  r.crashed_ranks = d.crashed_ranks;
  return r;
}

// Ranks stuck in a launch no communicator could be matched to, over all processes.
// `complete`: every rank of [0, world) was read (a missing profile may be whom a stuck rank waits for).
std::vector<int32_t> stuck_ranks(Transport& t, const std::vector<CrossRankInput>& local, int world, bool& complete) {
  std::vector<int64_t> stuck(size_t(world), 0), present(size_t(world), 0);
  for (const auto& in : local) stuck[size_t(in.rank)] = in.stuck, present[size_t(in.rank)] = 1;
  t.allreduce(std::span<int64_t>(stuck), Transport::Op::Max);
  t.allreduce(std::span<int64_t>(present), Transport::Op::Max);
  complete = std::all_of(present.begin(), present.end(), [](int64_t p) { return p != 0; });
  std::vector<int32_t> out;
  for (int r = 0; r < world; ++r)
    if (stuck[size_t(r)]) out.push_back(r);
  return out;
}

// A rank's evidence from the sums and what its reader kept.
c::RankEvidence evidence_of(const CrossRankInput& in, const c::RankAccumulator& acc,
                            const std::optional<topology::ParallelLayout>& layout) {
  c::RankEvidence e;
  const size_t r = size_t(in.rank);
  e.rank = in.rank, e.host = in.host, e.role = layout && in.rank < layout->world() ? layout->pp_rank(in.rank) : 0;
  e.ops = acc.ops[r], e.late = acc.late[r], e.wait_ns = acc.wait_ns[r], e.blame_ns = acc.blame_ns[r];
  e.hold_ns = acc.hold_ns[r], e.transfer_ns = acc.transfer_ns[r], e.blame_by_iteration = acc.blame_by_iteration[r];
  e.wait_by_iteration = acc.wait_by_iteration[r];
  e.iteration_number = in.iteration_number, e.step_ms = in.step_ms;
  for (double v : in.work.compute_ns) e.compute_ms.push_back(v / 1e6);
  for (double v : in.work.idle_ns) e.idle_ms.push_back(v / 1e6);
  for (double v : in.work.comm_ns) e.comm_ms.push_back(v / 1e6);
  e.kernels = in.work.kernels, e.top_names = in.work.top_names, e.name_ns = in.work.name_ns, e.name_count = in.work.name_count;
  e.findings = in.findings;
  return e;
}

// What the verdict knows of each communicator: members, their hosts, transfer time.
std::vector<c::CommEvidence> comm_evidence(const std::vector<c::RankEvidence>& evidence, const Inferred& inf,
                                           const std::vector<CommSummary>& comms) {
  std::map<int32_t, std::set<std::string>> hosts_of_rank;
  for (const auto& e : evidence) hosts_of_rank[e.rank].insert(e.host);
  std::vector<c::CommEvidence> ce;
  for (size_t ci = 0; ci < comms.size(); ++ci) {
    c::CommEvidence x;
    x.name = comms[ci].name, x.type = comms[ci].type, x.family = inf.inference.comms[ci].family;
    x.median_transfer_ns = comms[ci].median_transfer_ns, x.ops = comms[ci].matched_ops;
    x.transfer_by_iteration = comms[ci].transfer_by_iteration;
    std::set<std::string> hosts;
    for (auto r : comms[ci].ranks) {
      x.ranks.push_back(r);
      for (const auto& h : hosts_of_rank[r]) hosts.insert(h);
    }
    x.hosts.assign(hosts.begin(), hosts.end());
    ce.push_back(std::move(x));
  }
  return ce;
}

// The median transfer of a communicator's ops in each iteration.
void add_iteration_transfers(uint32_t ci, const c::CommReplay& replay, std::vector<IterTransfer>& out) {
  std::map<int32_t, std::vector<double>> by;
  for (const auto& op : replay.ops)
    if (op.iteration >= 0) by[op.iteration].push_back(double(op.transfer));
  for (auto& [it, t] : by) {
    std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
    out.push_back({ci, it, t[t.size() / 2]});
  }
}

}  // namespace

Replayed replay_stage(Exchange& x, const OwnedComms& owned, const std::vector<CommSummary>& comms,
                      const c::ClockSolution& clocks, int world, int64_t min_hang_margin_ns) {
  Replayed rp;
  rp.acc = c::RankAccumulator(world);
  rp.stats.assign(comms.size(), CommStats{});
  // The per-op results are dropped here (replay_owned recomputes them for the writer).
  for (const auto& [ci, members] : owned.members) {
    x.transport().alive();  // long local work at scale, not silence (--timeout)
    const auto decoded = decode(comms[ci], members);
    const auto replay = c::replay_communicator(decoded, clocks, rp.acc, min_hang_margin_ns);
    c::add_blame_records(replay, decoded, rp.blame, uint32_t(ci));
    rp.stats[ci] = {double(replay.ops.size()), replay.median_transfer_ns, double(replay.mismatch_seq + 1),
                    double(replay.clock_violations_before), double(replay.clock_violations_after)};
    rp.notes.mismatch.push_back({ci, replay.mismatch});
    add_iteration_transfers(ci, replay, rp.notes.transfers);
    for (const auto& d : replay.desync) rp.notes.desync.push_back(row_of(comms[ci], ci, d));
    for (const auto& d : replay.capture_ended) rp.notes.capture_ended.push_back(row_of(comms[ci], ci, d));
  }
  // The same sums on every process (one owner per communicator): they decide alike afterwards.
  std::vector<double> flat;
  for (const auto& s : rp.stats)
    flat.insert(flat.end(), {s.matched_ops, s.median_transfer_ns, s.mismatch_seq_plus_1, s.violations_before, s.violations_after});
  allreduce_sum(x.transport(), flat);
  for (size_t ci = 0; ci < rp.stats.size(); ++ci) {
    const double* v = flat.data() + ci * 5;
    rp.stats[ci] = {v[0], v[1], v[2], v[3], v[4]};
  }
  return rp;
}

void collect_desync(Exchange& x, const Replayed& rp, const Inferred& inf, const std::vector<CrossRankInput>& local,
                    int world, CrossRankResults& res) {
  for (const auto& n : allgather_list(x, std::vector<ReplayNotes>{rp.notes})) {
    for (const auto& m : n.mismatch) res.comms.at(m.comm).mismatch = m.text;
    for (const auto& t : n.transfers) {
      auto& v = res.comms.at(t.comm).transfer_by_iteration;
      if (t.iteration < 0 || t.iteration > (1 << 24)) continue;
      if (v.size() <= size_t(t.iteration)) v.resize(size_t(t.iteration) + 1, std::numeric_limits<double>::quiet_NaN());
      v[size_t(t.iteration)] = t.median_ns;
    }
    res.desync.insert(res.desync.end(), n.desync.begin(), n.desync.end());
    res.capture_ended.insert(res.capture_ended.end(), n.capture_ended.begin(), n.capture_ended.end());
  }
  bool complete = false;
  const auto stuck = stuck_ranks(x.transport(), local, world, complete);
  c::mark_root_causes(res.desync, res.capture_ended, stuck, complete);
  for (auto* rows : {&res.desync, &res.capture_ended})
    std::sort(rows->begin(), rows->end(), [](auto& a, auto& b) { return a.communicator < b.communicator; });
  c::number_in_pipeline_group(res.desync, inf.inference.comms);
}

double root_blame_cost(Transport& t, const c::BlameRecords& mine) {
  int64_t iterations = 0;
  for (const auto& o : mine.ops) iterations = std::max<int64_t>(iterations, int64_t(o.iteration) + 1);
  iterations = t.reduce(iterations, Transport::Op::Max);
  // Following the chains of N iterations takes about as long as replaying N * kPerIteration window
  // units (analyses::window_cost): measured 5.7 at 512 ranks (TP2, DP64), 11 at 8k synthesized
  // ranks (DP256: more roots per op). An estimate: the windows are shared out around it.
  constexpr double kPerIteration = 6;
  return kPerIteration * double(iterations);
}

c::RootBlame share_root_blame(Exchange& x, c::RootBlame rb, int world) {
  for (auto* v : {&rb.direct_ns, &rb.propagated_ns, &rb.root_ns}) {
    v->resize(size_t(world), 0.0);
    allreduce_sum(x.transport(), *v);
  }
  return rb;
}

void merge_sums(Transport& t, c::RankAccumulator& acc, const std::vector<CrossRankInput>& local) {
  for (auto* v : {&acc.ops, &acc.late, &acc.wait_ns, &acc.blame_ns, &acc.hold_ns, &acc.transfer_ns}) allreduce_sum(t, *v);
  for (auto* h : {&acc.wait_hist, &acc.skew_hist, &acc.transfer_hist})  // exact merge: sum of counts
    t.allreduce(std::span<uint64_t>(h->counts.data(), h->counts.size()), Transport::Op::Sum);
  int64_t max_iter = 0;
  for (const auto& b : acc.blame_by_iteration) max_iter = std::max(max_iter, int64_t(b.size()));
  for (const auto& b : acc.wait_by_iteration) max_iter = std::max(max_iter, int64_t(b.size()));
  for (const auto& in : local) max_iter = std::max(max_iter, int64_t(in.step_ms.size()));
  max_iter = t.reduce(max_iter, Transport::Op::Max);
  const size_t world = acc.ops.size(), width = size_t(max_iter);
  for (auto* series : {&acc.blame_by_iteration, &acc.wait_by_iteration}) {  // rank x iteration, summed
    std::vector<double> flat(world * width, 0.0);
    for (size_t r = 0; r < series->size(); ++r)
      for (size_t i = 0; i < (*series)[r].size(); ++i) flat[r * width + i] = (*series)[r][i];
    allreduce_sum(t, flat);
    for (size_t r = 0; r < world; ++r) (*series)[r].assign(flat.begin() + long(r * width), flat.begin() + long((r + 1) * width));
  }
}

// Ranks whose iteration numbers lack ones most ranks have (a ProfilerStep marker lost at the start
// or the end of one rank's capture, where its own collectives cannot restore it): one line each.
std::vector<std::string> missing_iterations(const std::vector<c::RankEvidence>& evidence) {
  std::map<int64_t, size_t> ranks_with;  // iteration number -> ranks that have it
  size_t numbered = 0;
  for (const auto& e : evidence) {
    if (e.iteration_number.empty()) continue;
    ++numbered;
    for (int64_t n : std::set<int64_t>(e.iteration_number.begin(), e.iteration_number.end())) ++ranks_with[n];
  }
  std::vector<std::string> out;
  if (numbered < 2) return out;
  for (const auto& e : evidence) {
    if (e.iteration_number.empty()) continue;
    const std::set<int64_t> have(e.iteration_number.begin(), e.iteration_number.end());
    std::vector<int64_t> lacks;
    for (const auto& [n, count] : ranks_with)
      if (2 * count > numbered && !have.count(n)) lacks.push_back(n);
    if (lacks.empty()) continue;
    std::string list;
    for (size_t i = 0; i < lacks.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(lacks[i]);
    if (lacks.size() > 8) list += ", ...";
    out.push_back("rank " + std::to_string(e.rank) + " has no iteration marker for iteration" + (lacks.size() > 1 ? "s " : " ") +
                  list + ", which most ranks have (a marker lost, or its capture started later or ended sooner): its " +
                  "iterations are compared by number");
  }
  return out;
}

// The verdict compares ranks iteration by index. Where ranks number their iterations differently
// (one lost the first or last marker), each keeps the iterations whose numbers every numbered rank
// has, in order, so that index i is one iteration of the job on every rank.
void align_iterations(std::vector<c::RankEvidence>& evidence) {
  std::optional<std::set<int64_t>> common;
  bool differ = false;
  const std::vector<int64_t>* first = nullptr;
  for (const auto& e : evidence) {
    if (e.iteration_number.empty()) continue;
    const std::set<int64_t> mine(e.iteration_number.begin(), e.iteration_number.end());
    if (!common) {
      common = mine;
    } else {
      std::set<int64_t> both;
      std::set_intersection(common->begin(), common->end(), mine.begin(), mine.end(), std::inserter(both, both.end()));
      *common = std::move(both);
    }
    differ |= first && *first != e.iteration_number;
    if (!first) first = &e.iteration_number;
  }
  if (!differ || !common || common->size() < 2) return;
  for (auto& e : evidence) {
    if (e.iteration_number.empty()) continue;
    std::vector<size_t> keep;
    for (size_t i = 0; i < e.iteration_number.size(); ++i)
      if (common->count(e.iteration_number[i])) keep.push_back(i);
    auto pick = [&](auto& v) {
      if (v.empty()) return;
      std::remove_reference_t<decltype(v)> out;
      for (size_t i : keep)
        if (i < v.size()) out.push_back(v[i]);
      v = std::move(out);
    };
    pick(e.iteration_number), pick(e.step_ms), pick(e.compute_ms), pick(e.kernels), pick(e.idle_ms), pick(e.comm_ms);
    pick(e.blame_by_iteration), pick(e.wait_by_iteration);
    for (auto& v : e.name_ns) pick(v);
    for (auto& v : e.name_count) pick(v);
  }
}

void judge(Exchange& x, const std::vector<CrossRankInput>& local, const Inferred& inf, CrossRankResults& res) {
  std::vector<c::RankEvidence> mine;
  for (const auto& in : local) mine.push_back(evidence_of(in, res.acc, res.layout.layout));
  std::vector<c::RankEvidence> evidence = allgather_list(x, mine);
  std::sort(evidence.begin(), evidence.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  if (x.transport().root())
    for (const auto& line : missing_iterations(evidence)) std::cerr << "straggler-scan: warning: " << line << "\n";
  align_iterations(evidence);
  // Stragglers are judged only on iterations before the first desync: from there on the members
  // that reached an op wait for ones that never come, which no one is to blame for as a straggler.
  size_t clean = SIZE_MAX;
  for (const auto& d : res.desync)
    if (d.iteration >= 0) clean = std::min(clean, size_t(d.iteration));
  res.verdict = c::decide(evidence, comm_evidence(evidence, inf, res.comms), clean);
  // Root causes: the cross-rank finding joins each rank's own, then the stragglers are tied to them.
  c::add_imbalance_findings(evidence, clean);
  c::tie_findings(res.verdict, evidence);
  for (const auto& e : evidence) res.findings.insert(res.findings.end(), e.findings.begin(), e.findings.end());
  for (const auto& e : evidence) {
    res.evidence_ranks.push_back(e.rank);
    res.step_ms.push_back(e.step_ms);
    res.iteration_number.push_back(e.iteration_number);
    res.idle_ms.push_back(e.idle_ms), res.comm_ms.push_back(e.comm_ms), res.compute_ms.push_back(e.compute_ms);
  }
}

}  // namespace straggler
