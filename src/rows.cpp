#include "rows.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "exchange.hpp"
#include "tables/rank_tables.hpp"

namespace straggler {
namespace {
double ms(int64_t ns) { return double(ns) / 1e6; }

}  // namespace

RankOutputs make_rank_outputs(const ranks::RankTimeline& tl, const ranks::RankMetrics& m) {
  RankOutputs o;
  RankRow& r = o.row;
  r.host = tl.host, r.file = tl.file;
  r.source_format = tl.source.format, r.source_version = tl.source.version, r.source_schema = tl.source.schema;
  r.iteration_source = ranks::iteration_source_name(m.iteration_source);
  r.device = tl.device, r.pid = tl.pid, r.utc_epoch_ns = tl.utc_epoch_ns;
  r.gpu_start_ns = m.gpu_start, r.gpu_end_ns = m.gpu_end, r.steady = m.steady;
  r.kernel_count = m.kernel_count, r.nccl_kernel_count = m.nccl_kernel_count, r.copy_count = m.copy_count;
  r.scope_ms = ms(m.scope.span_ns), r.busy_ms = ms(m.scope.busy_ns), r.compute_ms = ms(m.scope.compute_ns);
  r.nccl_ms = ms(m.scope.nccl_ns), r.exposed_nccl_ms = ms(m.scope.exposed_nccl_ns), r.idle_ms = ms(m.scope.idle_ns);
  r.whole_ms = ms(m.whole.span_ns), r.whole_busy_ms = ms(m.whole.busy_ns), r.whole_idle_ms = ms(m.whole.idle_ns);
  r.gap_count = m.gap_count, r.long_gap_count = m.long_gap_count, r.long_gap_ms = ms(m.long_gap_ns);
  r.h2d_bytes = m.h2d_bytes, r.d2h_bytes = m.d2h_bytes, r.h2d_ms = ms(m.h2d_ns), r.d2h_ms = ms(m.d2h_ns);
  r.sync_count = m.sync_count, r.sync_ms = ms(m.sync_ns);
  r.iterations = int32_t(m.iterations.size());
  r.step_ms_median = m.step_ms.p50, r.step_ms_p90 = m.step_ms.p90, r.step_ms_mean = m.step_ms.mean;
  r.hta_idle_pct = m.hta.idle_pct, r.hta_compute_pct = m.hta.compute_pct;
  r.hta_non_compute_pct = m.hta.non_compute_pct, r.hta_comm_overlap_pct = m.hta.comm_overlap_pct;
  for (size_t i = 0; i < m.top_kernels.size(); ++i) {
    const auto& k = m.top_kernels[i];
    o.top_kernels.push_back({-1, int32_t(i), tl.names.str(k.name), uint8_t(k.nccl), k.count, ms(k.total_ns),
                             k.count ? ms(k.total_ns) / double(k.count) : 0.0, ms(k.max_ns)});
  }
  for (const auto& it : m.iterations)
    o.iterations.push_back({-1, it.number, it.start, ms(it.step_ns), uint8_t(it.warmup)});
  o.histograms.kernel_ns = m.kernel_hist, o.histograms.nccl_kernel_ns = m.nccl_hist;
  o.histograms.idle_gap_ns = m.gap_hist, o.histograms.sync_ns = m.sync_hist;
  return o;
}

void set_rank(RankOutputs& o, int rank) {
  o.row.rank = rank;
  o.histograms.rank = rank;
  for (auto& k : o.top_kernels) k.rank = rank;
  for (auto& i : o.iterations) i.rank = rank;
}

void apply_cross_rank(RunResults& res, const CrossRankResults& x) {
  std::map<int32_t, size_t> at;
  for (size_t i = 0; i < x.evidence_ranks.size(); ++i) at[x.evidence_ranks[i]] = i;
  for (auto& row : res.ranks) {
    const size_t r = size_t(row.rank);
    row.collective_ops = int64_t(x.acc.ops[r]), row.late_count = int64_t(x.acc.late[r]);
    row.late_fraction = x.acc.ops[r] > 0 ? x.acc.late[r] / x.acc.ops[r] : 0;
    row.wait_ms = x.acc.wait_ns[r] / 1e6, row.blame_ms = x.acc.blame_ns[r] / 1e6;
    if (r < x.root_blame.root_ns.size())
      row.propagated_blame_ms = x.root_blame.propagated_ns[r] / 1e6, row.root_blame_ms = x.root_blame.root_ns[r] / 1e6;
    row.hold_ms = x.acc.hold_ns[r] / 1e6;
    row.clock_offset_ms = x.clocks.offset_ns[r] / 1e6, row.clock_drift_ppm = x.clocks.drift[r] * 1e6;
    row.clock_aligned = x.clocks.aligned[r];
    if (auto it = at.find(row.rank); it != at.end()) {
      row.straggler_score = x.verdict.score[it->second];
      row.cause = collectives::cause_name(x.verdict.cause[it->second]);
    }
  }
}

void sort_by_rank(RunResults& r) {
  auto by_rank = [](auto& a, auto& b) { return a.rank < b.rank; };
  std::sort(r.ranks.begin(), r.ranks.end(), by_rank);
  std::sort(r.histograms.begin(), r.histograms.end(), by_rank);
  std::stable_sort(r.top_kernels.begin(), r.top_kernels.end(), by_rank);
  std::stable_sort(r.iterations.begin(), r.iterations.end(), by_rank);
}

std::vector<std::string> gather_hosts(Transport& t, const std::vector<RankRow>& mine) {
  std::vector<std::string> names;
  for (const auto& r : mine) names.push_back(r.host);
  const auto all = allgather_list(t, names);
  const std::set<std::string> hosts(all.begin(), all.end());
  return {hosts.begin(), hosts.end()};
}

RunSummaryInput gather_summary_input(Transport& t, const RunResults& local, int root) {
  // The rows as the /ranks declaration ships them, then the steady-state step times.
  ByteWriter w;
  tables::ranks_table().pack(w, local.ranks);
  for (const auto& it : local.iterations)
    if (!it.warmup) w.pod(it.step_ms);
  RunSummaryInput s;
  s.failures = local.failures, s.inputs = local.inputs, s.hosts = local.hosts, s.total_ranks = local.total_ranks;
  s.cross = local.cross;
  for (const auto& blob : t.gather(w.bytes(), root)) {
    ByteReader b(blob);
    for (auto& r : tables::ranks_table().unpack(b)) s.ranks.push_back(std::move(r));
    while (!b.done()) s.steady_step_ms.push_back(b.pod<double>());
  }
  std::sort(s.ranks.begin(), s.ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  return s;
}

}  // namespace straggler
