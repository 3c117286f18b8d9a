#include "tables/collect.hpp"

#include <algorithm>

#include "tables/cross_tables.hpp"
#include "tables/rank_tables.hpp"
#include "tables/run_tables.hpp"
#include "version.hpp"

namespace straggler::tables {
namespace {

void add_rank_tables(ResultTables& out, const RunResults& res) {
  out.tables.push_back(ranks_table().materialize(res.ranks));
  out.tables.push_back(histogram_edges_table().materialize(histogram_bins()));
  out.tables.push_back(rank_histograms_table().materialize(res.histograms));
  out.tables.push_back(summed_histograms_table().materialize(res.histograms));
  out.tables.push_back(top_kernels_table().materialize(res.top_kernels));
  out.tables.push_back(iterations_table().materialize(res.iterations));
  out.tables.push_back(inputs_table().materialize(res.inputs));
  out.tables.push_back(failures_table().materialize(res.failures));
}

// Per-op tables: each owner replays its communicators again and hands their rows over one
// communicator at a time.
StreamedTables op_tables(const CrossRankResults& x, const std::vector<CommunicatorRow>& comms) {
  StreamedTables s;
  s.tables = {ops_table().materialize(std::vector<CommOp>{}), arrivals_table().materialize(std::vector<ArrivalRow>{})};
  s.rows = {0, 0};
  for (const auto& c : comms) {
    s.rows[0] += uint64_t(c.comm.matched_ops);
    s.rows[1] += uint64_t(c.comm.matched_ops) * c.comm.ranks.size();
  }
  s.produce = [&x, comms](const StreamedTables::Emit& emit) {
    replay_owned(x, [&](size_t ci, const collectives::CommReplay& rp) {
      if (rp.ops.empty()) return;
      std::vector<CommOp> ops;
      ops.reserve(rp.ops.size());
      for (const auto& o : rp.ops) ops.push_back({int32_t(ci), &o});
      emit(0, uint64_t(comms[ci].op_offset), ops_table().materialize(ops).columns);
      ops = {};
      std::vector<ArrivalRow> arrivals;
      for (const auto& a : rp.arrival)
        for (int64_t ns : a) arrivals.push_back({ns});
      emit(1, uint64_t(comms[ci].arrival_offset), arrivals_table().materialize(arrivals).columns);
    });
  };
  return s;
}

void add_collective_tables(ResultTables& out, const CrossRankResults& x) {
  std::vector<CommunicatorRow> comms;
  std::vector<MemberRow> members;
  int64_t ops = 0, arrivals = 0;
  for (const auto& c : x.comms) {
    comms.push_back({c, ops, int64_t(members.size()), arrivals});
    ops += c.matched_ops, arrivals += c.matched_ops * int64_t(c.ranks.size());
    for (int32_t r : c.ranks) members.push_back({r});
  }
  out.tables.push_back(communicators_table().materialize(comms));
  out.tables.push_back(members_table().materialize(members));
  out.streamed.push_back(op_tables(x, comms));
  std::vector<CollectiveHistogramBin> bins(ranks::LogHistogram::kBins);
  for (size_t b = 0; b < bins.size(); ++b)
    bins[b] = {x.acc.wait_hist.counts[b], x.acc.skew_hist.counts[b], x.acc.transfer_hist.counts[b]};
  out.tables.push_back(collective_histograms_table().materialize(bins));
}

TableData clock(const CrossRankResults& x) {
  std::vector<ClockRow> rows;
  for (int32_t r : x.evidence_ranks) {
    const size_t i = size_t(r);
    rows.push_back({r, x.clocks.offset_ns[i] / 1e6, x.clocks.drift[i] * 1e6, x.clocks.aligned[i]});
  }
  TableData t = clock_table().materialize(rows);
  t.attributes = {{"max_offset_ms", x.clock.max_offset_ns / 1e6},
                  {"residual_ms", x.clock.residual_ns / 1e6},
                  {"violations_before", x.clock.violations_before},
                  {"violations_after", x.clock.violations_after}};
  return t;
}

// Iteration index x rank (columns in /clock/rank order); 0 where a rank has no such iteration.
TableData iteration_matrices(const CrossRankResults& x) {
  size_t iters = 0;
  for (const auto& s : x.step_ms) iters = std::max(iters, s.size());
  auto at = [](const std::vector<double>& v, size_t i, double scale) { return i < v.size() ? v[i] / scale : 0.0; };
  std::vector<IterationMatrixRow> rows(iters);
  for (size_t i = 0; i < iters; ++i)
    for (size_t k = 0; k < x.evidence_ranks.size(); ++k) {
      const size_t r = size_t(x.evidence_ranks[k]);
      rows[i].step_ms.push_back(at(x.step_ms[k], i, 1));
      rows[i].blame_ms.push_back(at(x.acc.blame_by_iteration[r], i, 1e6));
      rows[i].wait_ms.push_back(at(x.acc.wait_by_iteration[r], i, 1e6));
    }
  TableData t = iteration_matrices_table().materialize(rows);
  for (auto& c : t.columns) c.width = x.evidence_ranks.size();
  return t;
}

void add_cross_tables(ResultTables& out, const CrossRankResults& x) {
  add_collective_tables(out, x);
  out.tables.push_back(clock(x));
  out.tables.push_back(stragglers_table().materialize(x.verdict.stragglers));
  out.tables.push_back(slow_links_table().materialize(x.verdict.slow_links));
  out.tables.push_back(desync_table().materialize(x.desync));
  out.tables.push_back(capture_ended_table().materialize(x.capture_ended));
  out.tables.push_back(iteration_matrices(x));
  std::vector<JobStepRow> job;
  for (double v : x.verdict.job_step_ms) job.push_back({v});
  out.tables.push_back(job_step_table().materialize(job));
  out.tables.push_back(change_points_table().materialize(x.verdict.change_points));
}

}  // namespace

ResultTables collect_tables(const RunResults& res) {
  ResultTables out;
  out.file_attributes = {{"tool", std::string("straggler-scan")},
                         {"version", std::string(kToolVersion)},
                         {"command_line", res.command_line},
                         {"ranks", int64_t(res.total_ranks)},
                         {"ranks_failed", int64_t(res.failures.size())},
                         {"hosts", res.hosts}};
  add_rank_tables(out, res);
  if (res.cross) add_cross_tables(out, *res.cross);
  return out;
}

}  // namespace straggler::tables
