#include "collectives/replay.hpp"

#include "collectives/bandwidth.hpp"

#include <algorithm>
#include <map>

#include "ranks/sat_math.hpp"

namespace collectives {

// Corrected times of untrusted profiles may lie anywhere in int64: time arithmetic saturates.
using ranks::diff_d;
using ranks::sat_add;
using ranks::sat_sub;

namespace {
// End-before-arrival by more than this is a clock-condition violation (kernel end jitter).
constexpr int64_t kViolationSlackNs = 20'000;

size_t common_ops(const std::vector<MemberOps>& m) {
  size_t n = SIZE_MAX;
  for (const auto& x : m) n = std::min(n, x.ops.size());
  return m.empty() ? 0 : n;
}
}  // namespace

RankAccumulator::RankAccumulator(int world)
    : ops(size_t(world)), late(size_t(world)), wait_ns(size_t(world)), blame_ns(size_t(world)),
      hold_ns(size_t(world)), transfer_ns(size_t(world)), blame_by_iteration(size_t(world)),
      wait_by_iteration(size_t(world)) {}

namespace {
void add_at(std::vector<double>& v, int32_t i, double x) {
  if (i < 0) return;
  if (v.size() <= size_t(i)) v.resize(size_t(i) + 1);
  v[size_t(i)] += x;
}
void add_series(std::vector<double>& into, const std::vector<double>& from) {
  if (into.size() < from.size()) into.resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) into[i] += from[i];
}
}  // namespace

void RankAccumulator::add(const RankAccumulator& o) {
  for (size_t r = 0; r < ops.size(); ++r) {
    ops[r] += o.ops[r], late[r] += o.late[r], wait_ns[r] += o.wait_ns[r], blame_ns[r] += o.blame_ns[r];
    hold_ns[r] += o.hold_ns[r], transfer_ns[r] += o.transfer_ns[r];
    add_series(blame_by_iteration[r], o.blame_by_iteration[r]);
    add_series(wait_by_iteration[r], o.wait_by_iteration[r]);
  }
  wait_hist.merge(o.wait_hist), skew_hist.merge(o.skew_hist), transfer_hist.merge(o.transfer_hist);
}

std::vector<ClockEdge> comm_clock_edges(const std::vector<MemberOps>& members) {
  std::vector<ClockEdge> edges;
  const size_t n = common_ops(members);
  if (members.size() < 2 || n == 0) return edges;
  // Only ops whose members finished together say where the clocks are (not grouped exchanges).
  std::vector<size_t> keep;
  for (size_t k = 0; k < n; ++k)
    if (std::none_of(members.begin(), members.end(), [&](const MemberOps& m) { return m.ops[k].grouped_exchange; }))
      keep.push_back(k);
  std::vector<int64_t> ref;
  for (size_t k : keep) ref.push_back(members[0].ops[k].end);
  for (size_t m = 1; m < members.size(); ++m) {
    std::vector<int64_t> e;
    for (size_t k : keep) e.push_back(members[m].ops[k].end);
    edges.push_back(fit_pair(members[m].rank, members[0].rank, e, ref));
  }
  return edges;
}

namespace {

// Members must issue the same collective at the same position: the first op where they do not.
void check_types(const std::vector<MemberOps>& members, size_t k, CommReplay& out) {
  for (size_t m = 1; m < members.size() && out.mismatch_seq < 0; ++m)
    if (members[m].ops[k].type != members[0].ops[k].type) {
      out.mismatch_seq = int64_t(k);
      out.mismatch = std::string("rank ") + std::to_string(members[0].rank) + " issued " +
                     collective_name(members[0].ops[k].type) + ", rank " + std::to_string(members[m].rank) +
                     " issued " + collective_name(members[m].ops[k].type);
    }
}

// Op k of every member, matched: its row, clock violations before and after correction, and the
// members' waits and the last arriver's blame added into acc. Returns its transfer time.
double replay_op(const std::vector<MemberOps>& members, size_t k, const ClockSolution& clocks, CommReplay& out,
                 RankAccumulator& acc) {
  const size_t nm = members.size();
  std::vector<int64_t> arr(nm), end(nm), raw_arr(nm), raw_end(nm);
  for (size_t m = 0; m < nm; ++m) {
    const auto& op = members[m].ops[k];
    raw_arr[m] = op.start, raw_end[m] = op.end;
    arr[m] = clocks.correct(members[m].rank, op.start);
    end[m] = clocks.correct(members[m].rank, op.end);
  }
  const OpTiming raw = decompose(raw_arr, raw_end), t = decompose(arr, end);
  const int64_t min_end_raw = *std::min_element(raw_end.begin(), raw_end.end());
  const int64_t min_end = *std::min_element(end.begin(), end.end());
  out.clock_violations_before += sat_add(min_end_raw, kViolationSlackNs) < raw.last_arrival;
  out.clock_violations_after += sat_add(min_end, kViolationSlackNs) < t.last_arrival;
  const auto& last = members[size_t(t.last)];
  OpRow row;
  row.seq = uint32_t(k);
  row.type = members[0].ops[k].type;
  row.last_rank = last.rank;
  row.iteration = last.ops[k].iteration;
  row.first_arrival = t.first_arrival;
  row.skew = t.skew, row.transfer = t.transfer, row.hold = t.hold, row.blame = t.blame;
  for (size_t m = 0; m < nm; ++m) row.bytes = std::max(row.bytes, members[m].ops[k].bytes);
  row.busbw_gbps = bus_bandwidth_gbps(row.type, row.bytes, int(nm), double(t.transfer));
  out.ops.push_back(row);
  out.arrival.push_back(arr);
  for (size_t m = 0; m < nm; ++m) {
    const size_t r = size_t(members[m].rank);
    acc.ops[r] += 1;
    const double wait = diff_d(t.last_arrival, arr[m]);
    acc.wait_ns[r] += wait;
    acc.transfer_ns[r] += double(t.transfer);
    // Exposed: the part of the wait the rank's compute did not fill (CollectiveOp::overlap).
    add_at(acc.wait_by_iteration[r], members[m].ops[k].iteration, wait * (1.0 - members[m].ops[k].overlap / 255.0));
    acc.wait_hist.add(sat_sub(t.last_arrival, arr[m]));
  }
  acc.skew_hist.add(t.skew);
  acc.transfer_hist.add(t.transfer);
  const size_t lr = size_t(last.rank);
  acc.late[lr] += 1;
  acc.blame_ns[lr] += double(t.blame);
  acc.hold_ns[lr] += double(t.hold);
  add_at(acc.blame_by_iteration[lr], row.iteration, double(t.blame));
  return double(t.transfer);
}

// The iteration of a member's op n that has no kernel (blocked: never completed), from how many
// ops the communicator runs per iteration: P = the most ops it ran in one iteration before the
// last (whose ops a cut-off capture or an inferred period may have folded together), and op n is
// in the iteration of op 0 plus n / P. NCCL runs a communicator's ops in order and a training step
// issues the same ones each time, so the count places it; its last completed op's iteration would
// lag by one when the op opens an iteration. -1 when fewer than two iterations are seen.
int32_t iteration_by_count(const std::vector<CollectiveOp>& ops, size_t n) {
  if (ops.empty() || ops.front().iteration < 0 || ops.back().iteration <= ops.front().iteration) return -1;
  std::map<int32_t, size_t> per;
  for (const auto& o : ops) per[o.iteration]++;
  size_t p = 0;
  for (const auto& [it, count] : per)
    if (it != ops.back().iteration) p = std::max(p, count);
  if (p == 0) return -1;
  return ops.front().iteration + int32_t(n / p);
}

// Op n, the first not every member completed: who reached it (completed or launched it), when,
// and in which iteration. `reached_at`: the last arrival of the members that reached it.
Desync reached(const std::vector<MemberOps>& members, size_t n, const ClockSolution& clocks, int64_t& reached_at) {
  Desync d;
  d.seq = uint32_t(n);
  reached_at = INT64_MIN;
  for (const auto& m : members) {
    if (m.ops.size() > n) {
      d.type = m.ops[n].type;
      if (m.ops[n].iteration >= 0 && (d.iteration < 0 || m.ops[n].iteration < d.iteration)) d.iteration = m.ops[n].iteration;
      reached_at = std::max(reached_at, clocks.correct(m.rank, m.ops[n].start));
    } else if (m.pending_next) {
      if (d.type == CollectiveType::Unknown && !m.ops.empty()) d.type = m.ops.back().type;
      if (m.pending_launch != 0) reached_at = std::max(reached_at, clocks.correct(m.rank, m.pending_launch));
      d.blocked_ranks.push_back(m.rank);
    }
  }
  if (d.iteration < 0)  // only blocked members: count the op's place in the communicator's period
    for (const auto& m : members) {
      if (!m.pending_next || m.ops.size() != n) continue;
      const int32_t it = iteration_by_count(m.ops, n);
      if (it >= 0 && (d.iteration < 0 || it < d.iteration)) d.iteration = it;
    }
  return d;
}

// Desync: the first op that not every member reached (see Desync for the rule); members whose
// capture merely ended go to capture_ended.
void find_desync(const std::vector<MemberOps>& members, size_t n, const ClockSolution& clocks, CommReplay& out) {
  int64_t reached_at = INT64_MIN;
  Desync d = reached(members, n, clocks, reached_at), ended;
  ended.seq = d.seq, ended.type = d.type, ended.blocked_ranks = d.blocked_ranks, ended.iteration = d.iteration;
  // Nobody completed the op (a collective completes on no member unless all joined it). The
  // longest a blocked member is known to have waited in it, up to the end of its own capture.
  bool completed = false;
  int64_t blocked_until = INT64_MIN;
  for (const auto& m : members) {
    completed |= m.ops.size() > n;
    if (!m.pending_next) continue;
    const int64_t cap = clocks.correct(m.rank, m.capture_end);
    // Unknown launch time: pending_ops only reports launches older than the margin anyway.
    const int64_t since = m.pending_launch != 0 ? clocks.correct(m.rank, m.pending_launch) : INT64_MIN;
    if (since == INT64_MIN || sat_sub(cap, since) > out.hang_margin_ns) blocked_until = std::max(blocked_until, cap);
  }
  for (const auto& m : members) {
    if (m.ops.size() > n || m.pending_next) continue;
    const int64_t cap_end = clocks.correct(m.rank, m.capture_end);
    // Unknown arrival (only blocked members, launch times unknown): their launches are at least
    // kMinHangMarginNs old at their own capture end; the missing member's capture must reach it.
    const bool went_on = reached_at == INT64_MIN || sat_sub(cap_end, out.hang_margin_ns) > reached_at;
    // Its capture ended first, but the others stayed blocked in the op, and were still recorded
    // well after it ended: it died (a crash), they waited for it.
    const bool crashed = !went_on && !completed && blocked_until != INT64_MIN &&
                         sat_sub(blocked_until, out.hang_margin_ns) > cap_end;
    if (crashed) d.crashed_ranks.push_back(m.rank);
    (went_on || crashed ? d : ended).missing_ranks.push_back(m.rank);
  }
  if (!d.missing_ranks.empty()) out.desync.push_back(std::move(d));
  if (!ended.missing_ranks.empty()) out.capture_ended.push_back(std::move(ended));
}

}  // namespace

CommReplay replay_communicator(const std::vector<MemberOps>& members, const ClockSolution& clocks,
                               RankAccumulator& acc, int64_t min_hang_margin_ns) {
  CommReplay out;
  const size_t n = common_ops(members);
  out.edges = comm_clock_edges(members);
  std::vector<double> transfers;
  for (size_t k = 0; k < n; ++k) {
    check_types(members, k, out);
    transfers.push_back(replay_op(members, k, clocks, out, acc));
  }
  if (!transfers.empty()) {
    std::nth_element(transfers.begin(), transfers.begin() + long(transfers.size() / 2), transfers.end());
    out.median_transfer_ns = transfers[transfers.size() / 2];
  }
  // The hang margin: twice the longest gap between consecutive matched ops' first arrivals.
  int64_t quiet = 0;
  for (size_t k = 1; k < out.ops.size(); ++k) quiet = std::max(quiet, sat_sub(out.ops[k].first_arrival, out.ops[k - 1].first_arrival));
  out.hang_margin_ns = std::max(min_hang_margin_ns, sat_add(quiet, quiet));
  size_t most = 0;
  for (const auto& m : members) most = std::max(most, m.ops.size() + (m.pending_next ? 1 : 0));
  if (most > n) find_desync(members, n, clocks, out);
  return out;
}

}  // namespace collectives
