// write_hdf5: the layout documented in docs/hdf5-layout.md. Rows computed by a process are
// written by that process; tables every process holds (cross-rank results, inputs, failures)
// are written by process 0.
#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "cross_rank.hpp"
#include "exchange.hpp"
#include "h5_file.hpp"
#include "hdf5_writer.hpp"
#include "output_files.hpp"
#include "ranks/discovery.hpp"
#include "version.hpp"

namespace straggler {
namespace {
namespace fs = std::filesystem;
using h5::File;
using Rows = std::vector<uint64_t>;

// Global row index of each local row of a table grouped by rank: every process learns the row
// counts of every rank, in rank order.
struct RowPlan {
  uint64_t total = 0;
  Rows local;  // global index of each local row, in local order
};

RowPlan plan_rows(Transport& t, const std::vector<std::pair<int32_t, uint64_t>>& local_counts /* (rank, rows) */) {
  ByteWriter w;
  for (auto [r, n] : local_counts) w.pod(r), w.pod(n);
  std::map<int32_t, uint64_t> counts;
  for (const auto& blob : t.allgather(w.bytes())) {
    ByteReader b(blob);
    while (!b.done()) {
      const auto r = b.pod<int32_t>();
      counts[r] += b.pod<uint64_t>();
    }
  }
  std::map<int32_t, uint64_t> offset;
  RowPlan p;
  for (auto [r, n] : counts) offset[r] = p.total, p.total += n;
  for (auto [r, n] : local_counts)
    for (uint64_t i = 0; i < n; ++i) p.local.push_back(offset[r]++);
  return p;
}

template <class Row, class F>
auto col(const std::vector<Row>& rows, F f) {
  std::vector<std::decay_t<decltype(f(rows.front()))>> out;
  for (const auto& r : rows) out.push_back(f(r));
  return out;
}

void write_ranks(File& f, const RunResults& res) {
  std::vector<std::pair<int32_t, uint64_t>> counts;
  for (const auto& r : res.ranks) counts.push_back({r.rank, 1});
  const RowPlan p = plan_rows(f.transport(), counts);
  const auto& R = res.ranks;
  const uint64_t n = p.total;
  f.group("/ranks");
  f.column("/ranks/rank", n, p.local, col(R, [](auto& r) { return r.rank; }), nullptr, "global training rank");
  f.strings("/ranks/host", n, p.local, col(R, [](auto& r) { return r.host; }), "Hostname of the capture");
  f.strings("/ranks/file", n, p.local, col(R, [](auto& r) { return r.file; }), "profile it was read from");
  f.strings("/ranks/source_format", n, p.local, col(R, [](auto& r) { return r.source_format; }),
            "format of the profile (its reader's name)");
  f.strings("/ranks/source_version", n, p.local, col(R, [](auto& r) { return r.source_version; }),
            "version of the tool that wrote the profile");
  f.strings("/ranks/source_schema", n, p.local, col(R, [](auto& r) { return r.source_schema; }),
            "schema version of the profile's format");
  f.strings("/ranks/iteration_source", n, p.local, col(R, [](auto& r) { return r.iteration_source; }),
            "nvtx, collective_period or none");
  f.strings("/ranks/cause", n, p.local, col(R, [](auto& r) { return r.cause; }), "straggler cause, empty if none");
  f.column("/ranks/device", n, p.local, col(R, [](auto& r) { return r.device; }), nullptr, "CUDA device ordinal");
  f.column("/ranks/pid", n, p.local, col(R, [](auto& r) { return r.pid; }));
  f.column("/ranks/utc_epoch_ns", n, p.local, col(R, [](auto& r) { return r.utc_epoch_ns; }), "ns");
  f.column("/ranks/gpu_start_ns", n, p.local, col(R, [](auto& r) { return r.gpu_start_ns; }), "ns");
  f.column("/ranks/gpu_end_ns", n, p.local, col(R, [](auto& r) { return r.gpu_end_ns; }), "ns");
  f.column("/ranks/steady", n, p.local, col(R, [](auto& r) { return r.steady; }));
  using I = int64_t RankRow::*;
  using D = double RankRow::*;
  const std::pair<const char*, I> ints[] = {
      {"kernel_count", &RankRow::kernel_count}, {"nccl_kernel_count", &RankRow::nccl_kernel_count},
      {"copy_count", &RankRow::copy_count},     {"gap_count", &RankRow::gap_count},
      {"long_gap_count", &RankRow::long_gap_count}, {"h2d_bytes", &RankRow::h2d_bytes},
      {"d2h_bytes", &RankRow::d2h_bytes},       {"sync_count", &RankRow::sync_count},
      {"collective_ops", &RankRow::collective_ops}, {"late_count", &RankRow::late_count}};
  for (auto [name, m] : ints)
    f.column("/ranks/" + std::string(name), n, p.local, col(R, [m = m](auto& r) { return r.*m; }),
             std::string(name).find("bytes") != std::string::npos ? "bytes" : nullptr);
  const std::pair<const char*, D> doubles[] = {
      {"scope_ms", &RankRow::scope_ms},       {"busy_ms", &RankRow::busy_ms},
      {"compute_ms", &RankRow::compute_ms},   {"nccl_ms", &RankRow::nccl_ms},
      {"exposed_nccl_ms", &RankRow::exposed_nccl_ms}, {"idle_ms", &RankRow::idle_ms},
      {"whole_ms", &RankRow::whole_ms},       {"whole_busy_ms", &RankRow::whole_busy_ms},
      {"whole_idle_ms", &RankRow::whole_idle_ms}, {"long_gap_ms", &RankRow::long_gap_ms},
      {"h2d_ms", &RankRow::h2d_ms},           {"d2h_ms", &RankRow::d2h_ms},
      {"sync_ms", &RankRow::sync_ms},         {"step_ms_median", &RankRow::step_ms_median},
      {"step_ms_p90", &RankRow::step_ms_p90}, {"step_ms_mean", &RankRow::step_ms_mean},
      {"wait_ms", &RankRow::wait_ms},         {"blame_ms", &RankRow::blame_ms},
      {"hold_ms", &RankRow::hold_ms},         {"clock_offset_ms", &RankRow::clock_offset_ms}};
  for (auto [name, m] : doubles)
    f.column("/ranks/" + std::string(name), n, p.local, col(R, [m = m](auto& r) { return r.*m; }), "ms");
  f.column("/ranks/late_fraction", n, p.local, col(R, [](auto& r) { return r.late_fraction; }));
  f.column("/ranks/clock_drift_ppm", n, p.local, col(R, [](auto& r) { return r.clock_drift_ppm; }), "ppm");
  f.column("/ranks/clock_aligned", n, p.local, col(R, [](auto& r) { return r.clock_aligned; }));
  f.column("/ranks/straggler_score", n, p.local, col(R, [](auto& r) { return r.straggler_score; }));
  f.column("/ranks/iterations", n, p.local, col(R, [](auto& r) { return r.iterations; }));

  // Histograms: one row per rank, in /ranks order.
  f.group("/histograms");
  const auto& e = ranks::LogHistogram::edges();
  const uint64_t bins = ranks::LogHistogram::kBins;
  f.replicated("/histograms/edges_ns", std::vector<int64_t>(e.begin(), e.end()), "ns",
               "lower edge of each bin; bin 0 = [0, 100 ns), the last bin >= 100 s");
  const struct {
    const char* name;
    ranks::LogHistogram RankHistograms::*h;
  } kinds[] = {{"kernel_ns", &RankHistograms::kernel_ns}, {"nccl_kernel_ns", &RankHistograms::nccl_kernel_ns},
               {"idle_gap_ns", &RankHistograms::idle_gap_ns}, {"sync_ns", &RankHistograms::sync_ns}};
  for (const auto& k : kinds) {
    std::vector<uint64_t> flat, all(bins, 0);
    for (const auto& h : res.histograms)
      for (uint64_t b = 0; b < bins; ++b) flat.push_back((h.*k.h).counts[b]), all[b] += (h.*k.h).counts[b];
    f.matrix("/histograms/" + std::string(k.name), n, bins, p.local, flat, "count",
             "per rank (row i = /ranks row i), bins of /histograms/edges_ns");
    f.transport().allreduce(std::span<uint64_t>(all), Transport::Op::Sum);
    f.replicated("/histograms/" + std::string(k.name) + "_all", all, "count", "exact sum over all ranks");
  }
}

void write_per_rank_tables(File& f, const RunResults& res) {
  {
    std::map<int32_t, uint64_t> c;
    for (const auto& k : res.top_kernels) c[k.rank]++;
    const RowPlan p = plan_rows(f.transport(), {c.begin(), c.end()});
    const auto& K = res.top_kernels;
    f.group("/kernels");
    f.group("/kernels/top");
    f.column("/kernels/top/rank", p.total, p.local, col(K, [](auto& k) { return k.rank; }));
    f.column("/kernels/top/position", p.total, p.local, col(K, [](auto& k) { return k.position; }), nullptr,
             "0 = largest total time on that rank");
    f.strings("/kernels/top/name", p.total, p.local, col(K, [](auto& k) { return k.name; }), "kernel short name");
    f.column("/kernels/top/nccl", p.total, p.local, col(K, [](auto& k) { return k.nccl; }));
    f.column("/kernels/top/count", p.total, p.local, col(K, [](auto& k) { return k.count; }));
    f.column("/kernels/top/total_ms", p.total, p.local, col(K, [](auto& k) { return k.total_ms; }), "ms");
    f.column("/kernels/top/mean_ms", p.total, p.local, col(K, [](auto& k) { return k.mean_ms; }), "ms");
    f.column("/kernels/top/max_ms", p.total, p.local, col(K, [](auto& k) { return k.max_ms; }), "ms");
  }
  std::map<int32_t, uint64_t> c;
  for (const auto& it : res.iterations) c[it.rank]++;
  const RowPlan p = plan_rows(f.transport(), {c.begin(), c.end()});
  const auto& I = res.iterations;
  f.group("/iterations");
  f.column("/iterations/rank", p.total, p.local, col(I, [](auto& i) { return i.rank; }));
  f.column("/iterations/number", p.total, p.local, col(I, [](auto& i) { return i.number; }), nullptr,
           "from the marker name (ProfilerStep#N), else the ordinal");
  f.column("/iterations/start_ns", p.total, p.local, col(I, [](auto& i) { return i.start_ns; }), "ns",
           "on the rank's own clock (+ /ranks/utc_epoch_ns for wall clock)");
  f.column("/iterations/step_ms", p.total, p.local, col(I, [](auto& i) { return i.step_ms; }), "ms");
  f.column("/iterations/warmup", p.total, p.local, col(I, [](auto& i) { return i.warmup; }));
}

void write_inputs(File& f, const RunResults& res) {
  f.group("/inputs");
  f.replicated_strings("/inputs/path", col(res.inputs, [](auto& i) { return i.path; }));
  f.replicated_strings("/inputs/format", col(res.inputs, [](auto& i) { return i.format; }));
  f.replicated_strings("/inputs/version", col(res.inputs, [](auto& i) { return i.version; }));
  f.replicated_strings("/inputs/schema", col(res.inputs, [](auto& i) { return i.schema; }));
  f.replicated("/inputs/ranks", col(res.inputs, [](auto& i) { return i.ranks; }), nullptr,
               "rank processes read from it (0: failed)");
  f.group("/failures");
  f.replicated("/failures/rank", col(res.failures, [](auto& x) { return x.rank; }));
  f.replicated_strings("/failures/file", col(res.failures, [](auto& x) { return x.file; }));
  f.replicated_strings("/failures/error", col(res.failures, [](auto& x) { return x.error; }));
}

std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (auto x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

void write_cross(File& f, const CrossRankResults& x) {
  // Communicators and their op tables, concatenated; each owner writes its communicators' blocks.
  const auto& C = x.comms;
  f.group("/collectives");
  f.group("/collectives/communicators");
  std::vector<int64_t> op_offset, member_offset, arrival_offset;
  int64_t ops = 0, members = 0, arrivals = 0;
  for (const auto& c : C) {
    op_offset.push_back(ops), member_offset.push_back(members), arrival_offset.push_back(arrivals);
    ops += c.matched_ops, members += int64_t(c.ranks.size()), arrivals += c.matched_ops * int64_t(c.ranks.size());
  }
  f.replicated_strings("/collectives/communicators/name", col(C, [](auto& c) { return c.name; }));
  f.replicated_strings("/collectives/communicators/collective",
                       col(C, [](auto& c) { return std::string(collectives::collective_name(c.type)); }));
  f.replicated("/collectives/communicators/size", col(C, [](auto& c) { return int32_t(c.ranks.size()); }));
  f.replicated("/collectives/communicators/matched_ops", col(C, [](auto& c) { return c.matched_ops; }));
  f.replicated("/collectives/communicators/median_transfer_ms",
               col(C, [](auto& c) { return c.median_transfer_ns / 1e6; }), "ms");
  f.replicated("/collectives/communicators/mismatch_seq", col(C, [](auto& c) { return c.mismatch_seq; }), nullptr,
               "first op whose members disagree (-1: none)");
  f.replicated_strings("/collectives/communicators/mismatch", col(C, [](auto& c) { return c.mismatch; }));
  f.replicated("/collectives/communicators/op_offset", op_offset, nullptr, "first row in /collectives/ops");
  f.replicated("/collectives/communicators/member_offset", member_offset, nullptr, "first row in /collectives/members");
  f.replicated("/collectives/communicators/arrival_offset", arrival_offset, nullptr,
               "first element in /collectives/arrival_ns (ops x size, op-major)");
  std::vector<int32_t> all_members;
  for (const auto& c : C) all_members.insert(all_members.end(), c.ranks.begin(), c.ranks.end());
  f.replicated("/collectives/members", all_members, nullptr, "ranks of each communicator, by member_offset");

  // Per-op tables: each owner replays its communicators again and writes their rows as they come
  // (never all of them in memory).
  const uint64_t nops = uint64_t(ops);
  f.group("/collectives/ops");
  File::Column<int32_t> comm_idx(f, "/collectives/ops/communicator", nops, nullptr, "row in /collectives/communicators");
  File::Column<int32_t> seq(f, "/collectives/ops/seq", nops, nullptr, "issue index on the communicator");
  File::Column<uint8_t> type(f, "/collectives/ops/type", nops, nullptr, "CollectiveType code (see docs)");
  File::Column<int32_t> last(f, "/collectives/ops/last_rank", nops, nullptr, "the member that arrived last");
  File::Column<int32_t> iter(f, "/collectives/ops/iteration", nops, nullptr, "iteration index on the last arriver");
  File::Column<int64_t> first(f, "/collectives/ops/first_arrival_ns", nops, "ns", "clock-corrected wall clock");
  File::Column<double> skew(f, "/collectives/ops/skew_ms", nops, "ms", "last arrival - first arrival");
  File::Column<double> transfer(f, "/collectives/ops/transfer_ms", nops, "ms", "latest end - last arrival");
  File::Column<double> hold(f, "/collectives/ops/hold_ms", nops, "ms", "last arrival - second-to-last arrival");
  File::Column<double> blame(f, "/collectives/ops/blame_ms", nops, "ms", "sum of the other members' waits");
  File::Column<double> busbw(f, "/collectives/ops/busbw_gbps", nops, "GB/s", "0 when the message size is unknown");
  File::Column<int64_t> arrival(f, "/collectives/arrival_ns", uint64_t(arrivals), "ns",
                                "clock-corrected kernel start of each member, op-major per communicator");
  if (!f.measuring())
    replay_owned(x, [&](size_t ci, const collectives::CommReplay& rp) {
      const uint64_t row = uint64_t(op_offset[ci]);
      const size_t n = rp.ops.size();
      auto put = [&](auto& column, auto value_of) {  // one block per column and communicator
        std::vector<std::decay_t<decltype(value_of(rp.ops[0]))>> v;
        v.reserve(n);
        for (const auto& o : rp.ops) v.push_back(value_of(o));
        column.add(row, v);
      };
      if (n == 0) return;
      put(comm_idx, [&](const auto&) { return int32_t(ci); });
      put(seq, [](const auto& o) { return int32_t(o.seq); });
      put(type, [](const auto& o) { return uint8_t(o.type); });
      put(last, [](const auto& o) { return o.last_rank; });
      put(iter, [](const auto& o) { return o.iteration; });
      put(first, [](const auto& o) { return o.first_arrival; });
      put(skew, [](const auto& o) { return double(o.skew) / 1e6; });
      put(transfer, [](const auto& o) { return double(o.transfer) / 1e6; });
      put(hold, [](const auto& o) { return double(o.hold) / 1e6; });
      put(blame, [](const auto& o) { return double(o.blame) / 1e6; });
      put(busbw, [](const auto& o) { return o.busbw_gbps; });
      uint64_t at = uint64_t(arrival_offset[ci]);
      for (const auto& a : rp.arrival) arrival.add(at, a), at += a.size();
    });
  for (auto* c : {&comm_idx, &seq, &last, &iter}) c->finish();
  type.finish(), first.finish(), arrival.finish();
  for (auto* c : {&skew, &transfer, &hold, &blame, &busbw}) c->finish();

  f.replicated("/histograms/collective_wait_ns_all", std::vector<uint64_t>(x.acc.wait_hist.counts.begin(), x.acc.wait_hist.counts.end()),
               "count", "every member's wait in every matched collective");
  f.replicated("/histograms/collective_skew_ns_all", std::vector<uint64_t>(x.acc.skew_hist.counts.begin(), x.acc.skew_hist.counts.end()),
               "count", "arrival skew of every matched collective");
  f.replicated("/histograms/collective_transfer_ns_all",
               std::vector<uint64_t>(x.acc.transfer_hist.counts.begin(), x.acc.transfer_hist.counts.end()), "count",
               "transfer time (latest end - last arrival) of every matched collective");
  f.group("/clock");
  std::vector<int32_t> rank;
  std::vector<double> off, drift;
  std::vector<uint8_t> aligned;
  for (int32_t r : x.evidence_ranks)
    rank.push_back(r), off.push_back(x.clocks.offset_ns[size_t(r)] / 1e6),
        drift.push_back(x.clocks.drift[size_t(r)] * 1e6), aligned.push_back(x.clocks.aligned[size_t(r)]);
  f.replicated("/clock/rank", rank);
  f.replicated("/clock/offset_ms", off, "ms", "subtracted from the rank's wall clock (reference: lowest rank)");
  f.replicated("/clock/drift_ppm", drift, "ppm");
  f.replicated("/clock/aligned", aligned, nullptr, "0: not connected to the reference by any communicator");
  f.attr("/clock", "max_offset_ms", x.clock.max_offset_ns / 1e6);
  f.attr("/clock", "residual_ms", x.clock.residual_ns / 1e6);
  f.attr("/clock", "violations_before", x.clock.violations_before);
  f.attr("/clock", "violations_after", x.clock.violations_after);

  const auto& S = x.verdict.stragglers;
  f.group("/stragglers");
  f.replicated("/stragglers/rank", col(S, [](auto& s) { return int32_t(s.rank); }));
  f.replicated_strings("/stragglers/host", col(S, [](auto& s) { return s.host; }));
  f.replicated_strings("/stragglers/cause", col(S, [](auto& s) { return s.cause; }));
  f.replicated_strings("/stragglers/evidence", col(S, [](auto& s) { return s.evidence; }));
  f.replicated("/stragglers/blame_ms", col(S, [](auto& s) { return s.blame_ms; }), "ms");
  f.replicated("/stragglers/hold_ms", col(S, [](auto& s) { return s.hold_ms; }), "ms");
  f.replicated("/stragglers/excess_ms", col(S, [](auto& s) { return s.excess_ms; }), "ms");
  f.replicated("/stragglers/late_fraction", col(S, [](auto& s) { return s.late_fraction; }));
  f.replicated("/stragglers/score", col(S, [](auto& s) { return s.score; }));
  f.replicated("/stragglers/onset_iteration", col(S, [](auto& s) { return s.onset_iteration; }));
  const auto& L = x.verdict.slow_links;
  f.group("/slow_links");
  f.replicated_strings("/slow_links/hosts", col(L, [](auto& l) {
    std::string h;
    for (const auto& x : l.hosts) h += (h.empty() ? "" : ",") + x;
    return h;
  }));
  f.replicated_strings("/slow_links/collective", col(L, [](auto& l) { return l.collective; }));
  f.replicated("/slow_links/slowdown", col(L, [](auto& l) { return l.slowdown; }));
  const auto& D = x.desync;
  f.group("/desync");
  f.replicated_strings("/desync/communicator", col(D, [](auto& d) { return d.communicator; }));
  f.replicated_strings("/desync/collective",
                       col(D, [](auto& d) { return std::string(collectives::collective_name(d.type)); }));
  f.replicated("/desync/seq", col(D, [](auto& d) { return d.seq; }));
  f.replicated_strings("/desync/missing_ranks", col(D, [](auto& d) { return join(d.missing_ranks); }));
  f.replicated_strings("/desync/blocked_ranks", col(D, [](auto& d) { return join(d.blocked_ranks); }));
  f.replicated("/desync/root_cause", col(D, [](auto& d) { return uint8_t(d.root_cause); }));
  f.replicated("/desync/group_seq", col(D, [](auto& d) { return d.group_seq; }), nullptr,
               "pipeline link pp-N:s-t: the op's number over all links of pp-N; -1 otherwise");
  const auto& E = x.capture_ended;  // not a hang: the member's capture stopped first
  f.group("/capture_ended");
  f.replicated_strings("/capture_ended/communicator", col(E, [](auto& d) { return d.communicator; }));
  f.replicated("/capture_ended/seq", col(E, [](auto& d) { return d.seq; }), nullptr,
               "first op the members below did not reach before their capture ended");
  f.replicated_strings("/capture_ended/ranks", col(E, [](auto& d) { return join(d.missing_ranks); }));

  // Step time matrix: iterations x ranks (columns in /clock/rank order).
  size_t iters = 0;
  for (const auto& s : x.step_ms) iters = std::max(iters, s.size());
  std::vector<double> step, blame_m, wait_m;
  for (size_t i = 0; i < iters; ++i)
    for (size_t k = 0; k < x.evidence_ranks.size(); ++k) {
      const size_t r = size_t(x.evidence_ranks[k]);
      step.push_back(i < x.step_ms[k].size() ? x.step_ms[k][i] : 0.0);
      blame_m.push_back(i < x.acc.blame_by_iteration[r].size() ? x.acc.blame_by_iteration[r][i] / 1e6 : 0.0);
      wait_m.push_back(i < x.acc.wait_by_iteration[r].size() ? x.acc.wait_by_iteration[r][i] / 1e6 : 0.0);
    }
  Rows rows;
  if (f.root()) rows.resize(iters), std::iota(rows.begin(), rows.end(), 0);
  const uint64_t nr = x.evidence_ranks.size();
  f.matrix("/iterations/step_ms_matrix", iters, nr, f.root() ? rows : Rows{}, step, "ms",
           "iteration index x rank (columns: /clock/rank); 0 where a rank has no such iteration");
  f.matrix("/iterations/blame_ms_matrix", iters, nr, f.root() ? rows : Rows{}, blame_m, "ms");
  f.matrix("/iterations/wait_ms_matrix", iters, nr, f.root() ? rows : Rows{}, wait_m, "ms");
  f.replicated("/iterations/job_step_ms", x.verdict.job_step_ms, "ms", "median over ranks, per iteration index");
  const auto& P = x.verdict.change_points;
  f.group("/iterations/change_points");
  f.replicated("/iterations/change_points/iteration", col(P, [](auto& c) { return c.iteration; }));
  f.replicated("/iterations/change_points/before_ms", col(P, [](auto& c) { return c.before_ms; }), "ms");
  f.replicated("/iterations/change_points/after_ms", col(P, [](auto& c) { return c.after_ms; }), "ms");
  f.replicated_strings("/iterations/change_points/culprit_ranks", col(P, [](auto& c) { return join(c.culprit_ranks); }));
}

void write_all(File& f, const RunResults& res) {
  f.attr("/", "tool", std::string("straggler-scan"));
  f.attr("/", "version", std::string(kToolVersion));
  f.attr("/", "command_line", res.command_line);
  f.attr("/", "ranks", int64_t(res.total_ranks));
  f.attr("/", "ranks_failed", int64_t(res.failures.size()));
  f.attr("/", "hosts", res.hosts);
  write_ranks(f, res);
  write_per_rank_tables(f, res);
  write_inputs(f, res);
  if (res.cross) write_cross(f, *res.cross);
}

}  // namespace

void write_hdf5(Transport& t, const std::string& path, const std::string& tmp, const RunResults& res) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // our own one-line errors instead of HDF5's stack
  // A file system that fills up mid-write makes parallel HDF5 deadlock in H5Fclose (its metadata
  // flush fails on some processes only): check the room first, with the bytes a dry run counts.
  uint64_t need = 0;
  {
    File measure(t, File::Measure{});
    write_all(measure, res);
    need = measure.measured_bytes() + measure.measured_bytes() / 4 + (uint64_t(1) << 20);
  }
  ByteWriter w;
  if (t.root()) {
    const int64_t room = free_bytes(tmp);
    w.str(room >= 0 && uint64_t(room) < need
              ? fmt::format("not enough space on its file system: it needs about {:.1f} MB, {:.1f} MB are free",
                            double(need) / 1e6, double(room) / 1e6)
              : std::string());
  }
  const std::string blob = t.broadcast(w.bytes(), 0);
  if (std::string why = ByteReader(blob).str(); !why.empty())
    throw OutputError(ranks::printable(path) + ": cannot write HDF5 output (" + why + ")");
  try {
    File f(t, tmp);
    write_all(f, res);
    f.close();
  } catch (const std::runtime_error& e) {
    // Collective calls fail on every process alike (same metadata everywhere) and File::close
    // agrees on failed data writes, so every process gets here together.
    std::error_code ec;
    if (t.root()) fs::remove(tmp, ec);
    throw OutputError(ranks::printable(path + ": cannot write HDF5 output (" + e.what() + ")"));
  }
}

}  // namespace straggler
