#include "cross_rank.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "analyses/what_if.hpp"
#include "collectives/host_clocks.hpp"
#include "cross_stages.hpp"
#include "exchange.hpp"
#include "timings.hpp"

namespace straggler {
namespace c = collectives;

CrossRankInput make_cross_input(const ranks::RankTimeline& tl, const std::vector<c::CollectiveOp>& ops,
                                const std::vector<ranks::Iteration>& its, int64_t min_hang_margin_ns) {
  CrossRankInput in;
  in.host = tl.host;
  in.pending = c::pending_ops(tl, ops, its, min_hang_margin_ns);
  in.summaries = summarize_streams(ops);
  in.streams = encode_streams(ops);
  in.capture_end = tl.utc_epoch_ns + tl.capture_end;
  for (const auto& p : tl.pending_nccl) in.stuck |= tl.capture_end - p.launch >= min_hang_margin_ns;
  // Any launch whose kernel never ran while the capture went on blocks the rank too (a kernel
  // queued behind a blocked collective, or one whose NCCL range is not traced): a host that stopped
  // launching by itself leaves none, its GPU runs what it queued (CUPTI records a kernel at its end).
  for (const auto& u : tl.unfinished_launches) in.stuck |= tl.capture_end - u.launch >= min_hang_margin_ns;
  in.work = ranks::iteration_work(tl, its);
  for (const auto& it : its) in.iteration_number.push_back(it.number), in.step_ms.push_back(double(it.step_ns) / 1e6);
  return in;
}

void set_cross_rank(CrossRankInput& in, int rank) {
  in.rank = rank;
  for (auto& s : in.summaries) s.rank = rank;
  for (auto& f : in.findings) f.rank = rank;
}

template <>
struct Wire<c::StreamSummary> {
  static void fields(auto& ar, auto& s) {
    ar(s.rank, s.stream, s.ops, s.type_prefix_hash, s.ops_per_iteration, s.first_type, s.clock_domain, s.first_ends,
       s.comm_id);
  }
};

// One member's ops of one communicator, on their way to its owner.
struct MemberRecord {
  uint32_t comm = 0, member = 0;
  OwnedMember m;
};
template <>
struct Wire<MemberRecord> {
  static void fields(auto& ar, auto& r) {
    ar(r.comm, r.member, r.m.capture_end, r.m.pending_next, r.m.pending_launch, r.m.ops, r.m.bytes);
  }
};

namespace {

// Ranks of one host share its clock (the host name, else the file they came from).
uint64_t clock_domain(const CrossRankInput& in) {
  return in.host.empty() ? uint64_t(in.clock_domain + 2) : std::hash<std::string>{}(in.host) | 1u;
}

// Frees a stream's encoding (assigning an empty string would keep its buffer: libstdc++ copies a
// short string into the existing allocation).
void release(StreamRecords& s) { std::string().swap(s.bytes); }

// Bytes of member records a process packs for one exchange round: bounds the round's buffers
// (sender and receiver each hold a few copies) whatever the job's size.
constexpr size_t kRoundBytes = size_t(16) << 20;

double max_offset(const c::ClockSolution& cs, const std::vector<c::StreamSummary>& streams) {
  double m = 0;
  for (const auto& s : streams) m = std::max(m, std::abs(cs.offset_ns[size_t(s.rank)]));
  return m;
}

// Median spread of the measured pairwise fits (same-file ties left out); largest offset and the
// ranks left unaligned under the applied solution, over the ranks present.
void summarize_clock(const ClockFit& fit, const c::ClockSolution& applied, const Inferred& inf, ClockSummary& out) {
  if (fit.distrusted) out.distrusted_edges = int64_t(fit.distrusted);
  std::vector<double> spreads;
  for (const auto& e : fit.edges)
    if (e.ops < c::kTieOps) spreads.push_back(e.spread_ns);
  std::sort(spreads.begin(), spreads.end());
  out.residual_ns = spreads.empty() ? 0 : spreads[spreads.size() / 2];
  std::set<int32_t> present;
  for (const auto& s : inf.streams) present.insert(s.rank);
  for (int32_t r : present) {
    out.max_offset_ns = std::max(out.max_offset_ns, std::abs(applied.offset_ns[size_t(r)]));
    out.unaligned_ranks += !applied.aligned[size_t(r)];
  }
}

// Per-communicator figures into the communicator rows and the clock summary.
void apply_stats(const std::vector<CommStats>& stats, CrossRankResults& res) {
  for (size_t ci = 0; ci < res.comms.size(); ++ci) {
    auto& s = res.comms[ci];
    s.matched_ops = int64_t(stats[ci].matched_ops), s.median_transfer_ns = stats[ci].median_transfer_ns;
    s.mismatch_seq = int64_t(stats[ci].mismatch_seq_plus_1) - 1;
    res.clock.violations_before += int64_t(stats[ci].violations_before);
    res.clock.violations_after += int64_t(stats[ci].violations_after);
    res.clock.ops += s.matched_ops;
  }
}

}  // namespace

std::vector<c::MemberOps> decode(const CommSummary& cs, const std::vector<OwnedMember>& owned) {
  std::vector<c::MemberOps> m(owned.size());
  for (size_t i = 0; i < owned.size(); ++i) {
    m[i].rank = cs.ranks.at(i), m[i].capture_end = owned[i].capture_end;
    m[i].pending_next = owned[i].pending_next, m[i].pending_launch = owned[i].pending_launch;
    m[i].ops = decode_stream(owned[i].bytes, owned[i].ops, m[i].rank);
  }
  if (cs.p2p && cs.shared) c::keep_link_ops(m, cs.link_offset_ns, cs.link_tolerance_ns);
  return m;
}

namespace {

// "ranks 4-7" style list of sorted ranks.
std::string rank_ranges(const std::vector<int32_t>& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (j == i ? std::to_string(r[i]) : std::to_string(r[i]) + "-" + std::to_string(r[j]));
    i = j + 1;
  }
  return out;
}

// A host whose clock is beyond NTP's milliseconds of the others leaves its collectives unmatched
// (or matched at wrong offsets): with the hosts' coarse offsets taken out of the stream summaries'
// end times, infer again. The op records keep their own clocks: the clock fit then finds the full
// offsets, and trusts them where they agree with the coarse ones (align_clocks).
void realign_hosts(Inferred& inf, const std::optional<topology::ParallelLayout>& given, const c::WorkSplit& split) {
  const auto offsets = c::coarse_domain_offsets(inf.streams, int64_t(c::kNtpErrorNs));
  if (offsets.empty()) return;
  std::vector<c::StreamSummary> shifted = inf.streams;
  std::map<std::pair<int32_t, int32_t>, int64_t> off_of;  // (rank, stream)
  int32_t world = 0;
  for (auto& s : shifted) {
    world = std::max(world, s.rank + 1);
    const auto it = offsets.find(s.clock_domain);
    const int64_t off = it == offsets.end() ? 0 : it->second;
    off_of[{s.rank, s.stream}] = off;
    for (auto& e : s.first_ends) e = ranks::sat_sub(e, off);
  }
  inf.inference = c::infer_communicators(shifted, given, {}, split);
  for (auto& comm : inf.inference.comms)  // link offsets back on the records' own clocks
    if (comm.p2p && comm.members.size() == 2)
      comm.link_offset_ns = ranks::sat_add(comm.link_offset_ns,
                                           ranks::sat_sub(off_of[{comm.members[0].rank, comm.members[0].stream}],
                                                          off_of[{comm.members[1].rank, comm.members[1].stream}]));
  inf.coarse_offset_ns.assign(size_t(world), 0);
  std::map<int64_t, std::set<int32_t>> ranks_at;  // offset -> ranks
  int32_t reference = world;
  for (const auto& [key, off] : off_of) {
    inf.coarse_offset_ns[size_t(key.first)] = off;
    if (off != 0) ranks_at[off].insert(key.first);
    else reference = std::min(reference, key.first);
  }
  // Offsets within a millisecond of each other are one story (hosts of unnamed ranks, each its
  // own clock domain, shifted together); the fine fit has the exact ones.
  std::vector<std::pair<std::vector<int32_t>, std::vector<int64_t>>> told;
  for (const auto& [off, rs] : ranks_at) {
    if (told.empty() || ranks::abs_diff(off, told.back().second.back()) > 1'000'000) told.emplace_back();
    told.back().first.insert(told.back().first.end(), rs.begin(), rs.end()), told.back().second.push_back(off);
  }
  for (auto& [rs, offs] : told) {
    std::sort(rs.begin(), rs.end());
    const double ms = double(offs[offs.size() / 2]) / 1e6;
    inf.far_clocks += fmt::format("{}{} {} {:.1f} ms {} rank {}'s", inf.far_clocks.empty() ? "" : "; ",
                                  rs.size() == 1 ? "rank" : "ranks", rank_ranges(rs), std::abs(ms),
                                  ms > 0 ? "ahead of" : "behind", reference);
  }
  timings().mark("align far-off host clocks");
}

}  // namespace

Inferred infer_stage(Exchange& x, const std::vector<CrossRankInput>& local,
                     const std::optional<topology::ParallelLayout>& given) {
  Inferred inf;
  std::vector<c::StreamSummary> mine;
  for (const auto& in : local)
    for (auto s : in.summaries) {
      s.clock_domain = clock_domain(in);
      mine.push_back(std::move(s));
    }
  inf.streams = allgather_list(x, mine);
  timings().mark("exchange stream summaries");
  // The pair scoring spread over the processes (every one gets the same communicators).
  c::WorkSplit split{x.transport().rank(), x.size(), [&x](const std::string& mine) { return x.allgather(mine); }};
  inf.inference = c::infer_communicators(inf.streams, given, {}, split);
  timings().mark("infer communicators");
  if (c::hosts_look_misaligned(inf.streams, inf.inference.comms, int64_t(c::kNtpErrorNs))) realign_hosts(inf, given, split);
  const auto& comms = inf.inference.comms;
  for (size_t ci = 0; ci < comms.size(); ++ci) {
    CommSummary s;
    s.name = comms[ci].name, s.id = comms[ci].id, s.type = comms[ci].type, s.owner = int32_t(ci % size_t(x.size()));
    s.family = comms[ci].family, s.p2p = comms[ci].p2p, s.by_layout_rule = comms[ci].by_layout_rule, s.shared = comms[ci].shared;
    s.link_offset_ns = comms[ci].link_offset_ns, s.link_tolerance_ns = comms[ci].link_tolerance_ns;
    for (const auto& m : comms[ci].members) s.ranks.push_back(m.rank), s.member_ops.push_back(m.ops);
    inf.comms.push_back(std::move(s));
  }
  return inf;
}

std::shared_ptr<OwnedComms> ship_records(Exchange& x, std::vector<CrossRankInput>& local, const Inferred& inf) {
  // (rank, stream) -> (comm, member)
  std::multimap<std::pair<int32_t, int32_t>, std::pair<uint32_t, uint32_t>> where;
  const auto& comms = inf.inference.comms;
  for (size_t ci = 0; ci < comms.size(); ++ci)
    for (size_t m = 0; m < comms[ci].members.size(); ++m)
      where.insert({{comms[ci].members[m].rank, comms[ci].members[m].stream}, {uint32_t(ci), uint32_t(m)}});
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
  // In rounds of bounded size; a stream's encoding is freed once packed for its last communicator.
  auto owned = std::make_shared<OwnedComms>();
  for (size_t next = 0;;) {
    std::vector<ByteWriter> to(static_cast<size_t>(x.size()));
    for (size_t packed = 0; next < sends.size() && packed < kRoundBytes; ++next) {
      const Send& s = sends[next];
      const CrossRankInput& in = local[s.in];
      StreamRecords& st = local[s.in].streams[s.stream];
      MemberRecord rec{s.comm, s.member, {in.capture_end, false, 0, st.ops, {}}};
      for (const auto& p : in.pending)
        if (p.stream == st.stream && p.seq == st.ops) rec.m.pending_next = true, rec.m.pending_launch = p.launch;
      rec.m.bytes = s.last ? std::move(st.bytes) : st.bytes;
      if (s.last) release(st);
      auto& w = to[size_t(inf.comms[s.comm].owner)];
      const size_t before = w.bytes().size();
      put(w, rec);
      packed += w.bytes().size() - before;
    }
    std::vector<std::string> blobs;
    for (auto& w : to) blobs.push_back(w.bytes());
    to.clear();
    for (const auto& blob : x.alltoall(blobs)) {
      std::vector<MemberRecord> recs;
      unpack_list(blob, recs);
      for (auto& r : recs) {
        auto& members = owned->members[r.comm];
        members.resize(inf.comms.at(r.comm).ranks.size());
        members.at(r.member) = std::move(r.m);
      }
    }
    if (x.transport().reduce<int64_t>(next < sends.size(), Transport::Op::Max) == 0) break;
  }
  timings().mark("ship op records to owners");
  return owned;
}

ClockFit align_clocks(Exchange& x, const OwnedComms& owned, const Inferred& inf, const std::vector<CrossRankInput>& local,
                      int world, bool correction) {
  ClockFit fit;
  std::vector<c::ClockEdge> mine;
  for (const auto& [ci, members] : owned.members) {
    x.transport().alive();
    for (const auto& e : c::comm_clock_edges(decode(inf.comms[ci], members))) mine.push_back(e);
  }
  // Ranks captured in one file share its clock: tie them with an edge that outweighs any estimate.
  std::map<int64_t, int32_t> first_of_domain;
  for (const auto& in : local) {
    auto [it, fresh] = first_of_domain.try_emplace(in.clock_domain, in.rank);
    if (!fresh) {
      c::ClockEdge tie;
      tie.a = in.rank, tie.b = it->second, tie.ops = c::kTieOps, tie.spread_ns = 0, tie.t_ref_ns = double(in.capture_end);
      mine.push_back(tie);
    }
  }
  fit.edges = allgather_list(x, mine);
  // A total order: pairs joined by several communicators (and the ties) would otherwise keep the
  // order the processes sent them in, and the solver's sums would differ in their last bits
  // between process counts (repro3 D_clock_offset_ulp_np). Doubles by their bits: NaN too.
  auto key = [](const c::ClockEdge& e) {
    auto bits = [](double d) { return std::bit_cast<uint64_t>(d); };
    return std::make_tuple(e.a, e.b, e.ops, bits(e.offset_ns), bits(e.drift), bits(e.t_ref_ns), bits(e.spread_ns));
  };
  std::sort(fit.edges.begin(), fit.edges.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
  int64_t reference = world;
  for (const auto& s : inf.streams) reference = std::min<int64_t>(reference, s.rank);
  reference = x.transport().reduce(reference, Transport::Op::Min);
  fit.reference = reference < world ? int(reference) : 0;
  const auto trusted = c::trusted_edges(fit.edges, &fit.distrusted, inf.coarse_offset_ns);
  fit.solution = c::solve_clocks(world, correction ? trusted : std::vector<c::ClockEdge>{}, fit.reference);
  timings().mark("align clocks");
  return fit;
}

namespace {

// Ranks of another job among these (CrossRankResults::foreign_ranks). The members of one
// collective end within microseconds of each other (NCCL semantics), so a rank whose every
// pairwise clock fit spreads beyond kMaxEdgeSpreadNs, or that is in no communicator and whose op
// ends never pile up with the others' (host_clocks.hpp), shares no collective with them, whatever
// its streams looked like. A
// far-off clock is no reason: its fits are tight, only their offset is large. Only a minority apart
// from the largest group of ranks so tied, each of its ranks apart from the rest, is another job's
// (a legitimate rank is alone only when no peer of any of its groups was profiled); two groups of
// ranks, each tied within, are two jobs, said in the report.
std::map<int32_t, std::string> foreign_ranks(const Inferred& inf, const std::vector<c::ClockEdge>& edges, int world) {
  std::vector<int> parent(static_cast<size_t>(world));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    return x;
  };
  std::vector<uint8_t> present(static_cast<size_t>(world), 0), tied(static_cast<size_t>(world), 0),
      tight(static_cast<size_t>(world), 0);
  for (const auto& s : inf.streams)
    if (s.ops > 0 && s.rank >= 0 && s.rank < world) present[size_t(s.rank)] = 1;
  for (const auto& cs : inf.comms)
    if (cs.ranks.size() > 1)
      for (int32_t r : cs.ranks)
        if (r >= 0 && r < world) tied[size_t(r)] = 1;
  for (const auto& e : edges)
    if (e.a >= 0 && e.b >= 0 && e.a < world && e.b < world && e.a != e.b &&
        (e.ops >= c::kTieOps || e.spread_ns <= c::kMaxEdgeSpreadNs))
      parent[size_t(find(e.a))] = find(e.b), tight[size_t(e.a)] = tight[size_t(e.b)] = 1;
  std::map<int, size_t> size;
  size_t total = 0;
  for (int r = 0; r < world; ++r)
    if (present[size_t(r)]) ++size[find(r)], ++total;
  if (size.size() < 2) return {};
  const int main = std::max_element(size.begin(), size.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  // The ends of the main group's ops, for ranks in no communicator: a rank whose streams inference
  // could not place (NCCL on its compute stream, say) still ends its collectives with them.
  std::vector<int64_t> main_sample, main_all;
  for (const auto& s : inf.streams)
    if (s.rank >= 0 && s.rank < world && find(s.rank) == main)
      for (size_t k = 0; k < s.first_ends.size(); ++k) {
        if (k < 8 && main_sample.size() < 4096) main_sample.push_back(s.first_ends[k]);
        main_all.push_back(s.first_ends[k]);
      }
  std::sort(main_all.begin(), main_all.end());
  auto ends_with_main = [&](int r) {
    std::vector<int64_t> mine;
    for (const auto& s : inf.streams)
      if (s.rank == r) mine.insert(mine.end(), s.first_ends.begin(), s.first_ends.end());
    return c::ends_meet(mine, main_sample, main_all);
  };
  std::map<int32_t, std::string> out;
  for (int r = 0; r < world; ++r) {
    if (!present[size_t(r)] || find(r) == main) continue;
    if (tight[size_t(r)]) return {};  // tied to other ranks: a group (a host, a job), not one stray
    if (!tied[size_t(r)] && ends_with_main(r)) continue;  // its collectives end with theirs: one job
    out[r] = tied[size_t(r)]
                 ? "not of this job: none of its collectives ends with the other ranks' (members of one collective "
                   "end within microseconds); another job's profile? Left out, the rest analysed without it"
                 : "not of this job: it ran NCCL kernels but shares no collective with any other rank; another job's "
                   "profile, or none of its peers was profiled? Left out, the rest analysed without it";
  }
  if (4 * out.size() > total || size[main] < 2) return {};
  return out;
}

// Ranks whose fitted clock stands apart from their host's (also CrossRankResults::foreign_ranks).
// Ranks on one host read one system clock (their captures' wall times come from it), so a rank
// whose collectives fit it more than a millisecond from the median of three or more host mates
// was tied to peers whose ops merely ended near its own: another job's profile that shares the
// host's name (semantic fuzzer, seed 3611: a rank of a 2x4x2 run among a 4x2x2 run's, 13 ms off).
std::map<int32_t, std::string> apart_from_host(const Inferred& inf, const c::ClockSolution& sol, int world) {
  std::map<uint64_t, std::set<int32_t>> ranks_of;  // host clock -> ranks
  for (const auto& s : inf.streams)
    if (s.rank >= 0 && s.rank < world && s.clock_domain != 0 && size_t(s.rank) < sol.offset_ns.size() &&
        sol.aligned[size_t(s.rank)])
      ranks_of[s.clock_domain].insert(s.rank);
  std::map<int32_t, std::string> out;
  for (const auto& [domain, rs] : ranks_of) {
    if (rs.size() < 4) continue;
    for (int32_t r : rs) {
      std::vector<double> mates;
      for (int32_t q : rs)
        if (q != r) mates.push_back(sol.offset_ns[size_t(q)]);
      std::nth_element(mates.begin(), mates.begin() + long(mates.size() / 2), mates.end());
      const double apart = sol.offset_ns[size_t(r)] - mates[mates.size() / 2];
      if (std::abs(apart) > 1e6)
        out[r] = fmt::format("not of this job: its collectives end with the other ranks' only at a clock {:.1f} ms from "
                             "the median of its {} host mates' (ranks on one host share a clock): chance matches; "
                             "another job's profile? Left out, the rest analysed without it",
                             std::abs(apart) / 1e6, rs.size() - 1);
    }
  }
  if (4 * out.size() > sol.offset_ns.size()) return {};
  return out;
}

}  // namespace

CrossRankResults run_cross_rank(Transport& t, std::vector<CrossRankInput>& local, int world,
                                const std::optional<topology::ParallelLayout>& layout_given, bool clock_correction,
                                int64_t min_hang_margin_ns) {
  Exchange x(t);
  CrossRankResults res;
  res.min_hang_margin_ns = min_hang_margin_ns;
  const Inferred inf = infer_stage(x, local, layout_given);
  res.comms = inf.comms, res.layout = inf.inference.layout;
  res.owned = ship_records(x, local, inf);
  const ClockFit fit = align_clocks(x, *res.owned, inf, local, world, clock_correction);
  res.foreign_ranks = foreign_ranks(inf, fit.edges, world);
  if (res.foreign_ranks.empty()) res.foreign_ranks = apart_from_host(inf, fit.solution, world);
  res.clocks = fit.solution;
  Replayed rp = replay_stage(x, *res.owned, res.comms, res.clocks, world, min_hang_margin_ns);
  // A correction that makes the clock condition worse (more ops ending before their last member
  // arrived) is wrong somewhere: never apply it. The replay counted both; replay again only then.
  if (clock_correction) {
    int64_t before = 0, after = 0;
    for (const auto& s : rp.stats) before += int64_t(s.violations_before), after += int64_t(s.violations_after);
    if (after > before) {
      res.clock.rejected = fmt::format("the fitted correction (max offset {:.3f} ms) would raise clock-condition "
                                       "violations from {} to {}; clocks left as recorded",
                                       max_offset(res.clocks, inf.streams) / 1e6, before, after);
      res.clocks = c::solve_clocks(world, {}, fit.reference);
      rp = replay_stage(x, *res.owned, res.comms, res.clocks, world, min_hang_margin_ns);
    }
  }
  summarize_clock(fit, res.clocks, inf, res.clock);
  res.clock.far_clocks = inf.far_clocks;
  apply_stats(rp.stats, res);
  timings().mark("replay owned communicators");
  collect_desync(x, rp, inf, local, world, res);
  timings().mark("desync");
  res.acc = std::move(rp.acc);
  merge_sums(t, res.acc, local);
  timings().mark("per-rank sums");
  judge(x, local, inf, res);
  res.bytes_exchanged = x.sent();
  res.bytes_exchanged_total = t.reduce(res.bytes_exchanged, Transport::Op::Sum);
  timings().mark("evidence and verdict");
  // Root blame feeds the rank rows only: process 0 follows its chains, on every op record, beside
  // its what-if windows. The verdict's costs are what fixing each problem buys: the what-if
  // replay's (docs/costs.md).
  c::RootBlame blame;
  const double blame_cost = root_blame_cost(t, rp.blame);
  auto pm = std::make_shared<analyses::PostMortem>(analyses::shared_post_mortem(
      t, res, std::move(rp.blame), [&](const c::BlameRecords& all) { blame = c::root_blame(all, world); }, blame_cost));
  analyses::charge_costs(*pm, res.verdict);
  res.post_mortem = std::move(pm);
  res.root_blame = share_root_blame(x, std::move(blame), world);
  timings().mark("root blame to every process");
  return res;
}

void replay_owned(const CrossRankResults& x, const std::function<void(size_t, const c::CommReplay&)>& fn) {
  if (!x.owned) return;
  c::RankAccumulator scratch(int(x.clocks.offset_ns.size()));  // the sums were taken in run_cross_rank
  for (const auto& [ci, members] : x.owned->members) {
    const auto replay = c::replay_communicator(decode(x.comms[ci], members), x.clocks, scratch, x.min_hang_margin_ns);
    if (int64_t(replay.ops.size()) != x.comms[ci].matched_ops)
      throw std::logic_error("replay of " + x.comms[ci].name + " differs from the analysis");
    fn(ci, replay);
  }
}

}  // namespace straggler
