#include "tables/rank_tables.hpp"

namespace straggler::tables {
namespace {
template <class Row>
int32_t rank_of(const Row& r) {
  return r.rank;
}
}  // namespace

// Metric definitions: ranks/include/ranks/metrics.hpp; cross-rank figures: collectives/.
const Table<RankRow>& ranks_table() {
  using R = RankRow;
  static const Table<R> t{
      "/ranks",
      "one row per rank, sorted by rank",
      Distribution::ByRank,
      {col("rank", &R::rank, "", "global training rank"), col("host", &R::host, "", "Hostname of the capture"),
       col("file", &R::file, "", "profile it was read from"),
       col("source_format", &R::source_format, "", "format of the profile (nsys-sqlite)"),
       col("source_version", &R::source_version, "", "version of the tool that wrote it"),
       col("source_schema", &R::source_schema, "", "schema version of the export"),
       col("iteration_source", &R::iteration_source, "", "nvtx, collective_period or none"),
       col("cause", &R::cause, "", "straggler cause, empty if none"),
       col("device", &R::device, "", "CUDA device ordinal"), col("pid", &R::pid),
       col("utc_epoch_ns", &R::utc_epoch_ns, "ns"), col("gpu_start_ns", &R::gpu_start_ns, "ns"),
       col("gpu_end_ns", &R::gpu_end_ns, "ns"), col("steady", &R::steady),
       col("kernel_count", &R::kernel_count), col("nccl_kernel_count", &R::nccl_kernel_count),
       col("copy_count", &R::copy_count), col("gap_count", &R::gap_count),
       col("long_gap_count", &R::long_gap_count), col("h2d_bytes", &R::h2d_bytes, "bytes"),
       col("d2h_bytes", &R::d2h_bytes, "bytes"), col("sync_count", &R::sync_count),
       col("collective_ops", &R::collective_ops), col("late_count", &R::late_count),
       col("scope_ms", &R::scope_ms, "ms"), col("busy_ms", &R::busy_ms, "ms"),
       col("compute_ms", &R::compute_ms, "ms"), col("nccl_ms", &R::nccl_ms, "ms"),
       col("exposed_nccl_ms", &R::exposed_nccl_ms, "ms"), col("idle_ms", &R::idle_ms, "ms"),
       col("whole_ms", &R::whole_ms, "ms"), col("whole_busy_ms", &R::whole_busy_ms, "ms"),
       col("whole_idle_ms", &R::whole_idle_ms, "ms"), col("long_gap_ms", &R::long_gap_ms, "ms"),
       col("h2d_ms", &R::h2d_ms, "ms"), col("d2h_ms", &R::d2h_ms, "ms"), col("sync_ms", &R::sync_ms, "ms"),
       col("step_ms_median", &R::step_ms_median, "ms"), col("step_ms_p90", &R::step_ms_p90, "ms"),
       col("step_ms_mean", &R::step_ms_mean, "ms"), col("wait_ms", &R::wait_ms, "ms"),
       col("blame_ms", &R::blame_ms, "ms"), col("hold_ms", &R::hold_ms, "ms"),
       col("clock_offset_ms", &R::clock_offset_ms, "ms"), col("late_fraction", &R::late_fraction),
       col("clock_drift_ppm", &R::clock_drift_ppm, "ppm"), col("clock_aligned", &R::clock_aligned),
       col("straggler_score", &R::straggler_score), col("iterations", &R::iterations)},
      rank_of<R>};
  return t;
}

namespace {
using H = RankHistograms;
using Hist = ranks::LogHistogram H::*;
template <Hist h>
const auto& counts(const H& r) {
  return (r.*h).counts;
}
}  // namespace

const Table<RankHistograms>& rank_histograms_table() {
  static const std::string d = "per rank (row i = /ranks row i), bins of /histograms/edges_ns";
  static const Table<H> t{"/histograms",
                          "per-rank duration histograms, in scope",
                          Distribution::ByRank,
                          {computed<H>("kernel_ns", counts<&H::kernel_ns>, "count", d),
                           computed<H>("nccl_kernel_ns", counts<&H::nccl_kernel_ns>, "count", d),
                           computed<H>("idle_gap_ns", counts<&H::idle_gap_ns>, "count", d),
                           computed<H>("sync_ns", counts<&H::sync_ns>, "count", d)},
                          rank_of<H>};
  return t;
}

const Table<RankHistograms>& summed_histograms_table() {
  static const std::string d = "exact sum over all ranks";
  static const Table<H> t{"/histograms",
                          "the per-rank histograms summed over all ranks",
                          Distribution::Summed,
                          {computed<H>("kernel_ns_all", counts<&H::kernel_ns>, "count", d),
                           computed<H>("nccl_kernel_ns_all", counts<&H::nccl_kernel_ns>, "count", d),
                           computed<H>("idle_gap_ns_all", counts<&H::idle_gap_ns>, "count", d),
                           computed<H>("sync_ns_all", counts<&H::sync_ns>, "count", d)}};
  return t;
}

const Table<HistogramBin>& histogram_edges_table() {
  static const Table<HistogramBin> t{
      "/histograms",
      "one row per bin",
      Distribution::Replicated,
      {col("edges_ns", &HistogramBin::edge_ns, "ns", "lower edge of each bin; bin 0 = [0, 100 ns), the last bin >= 100 s")}};
  return t;
}

std::vector<HistogramBin> histogram_bins() {
  std::vector<HistogramBin> bins;
  for (int64_t e : ranks::LogHistogram::edges()) bins.push_back({e});
  return bins;
}

const Table<TopKernelRow>& top_kernels_table() {
  using K = TopKernelRow;
  static const Table<K> t{"/kernels/top",
                          "each rank's top kernels by total time (grouped by rank, largest first)",
                          Distribution::ByRank,
                          {col("rank", &K::rank), col("position", &K::position, "", "0 = largest total time on that rank"),
                           col("name", &K::name, "", "kernel short name"), col("nccl", &K::nccl),
                           col("count", &K::count), col("total_ms", &K::total_ms, "ms"),
                           col("mean_ms", &K::mean_ms, "ms"), col("max_ms", &K::max_ms, "ms")},
                          rank_of<K>};
  return t;
}

const Table<IterationRow>& iterations_table() {
  using I = IterationRow;
  static const Table<I> t{
      "/iterations",
      "one row per rank and iteration (grouped by rank)",
      Distribution::ByRank,
      {col("rank", &I::rank), col("number", &I::number, "", "from the marker name (ProfilerStep#N), else the ordinal"),
       col("start_ns", &I::start_ns, "ns", "on the rank's own clock (+ /ranks/utc_epoch_ns for wall clock)"),
       col("step_ms", &I::step_ms, "ms"), col("warmup", &I::warmup)},
      rank_of<I>};
  return t;
}

}  // namespace straggler::tables
