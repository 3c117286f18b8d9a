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
  const std::string scope = "in scope (metrics.hpp)", whole = "over the whole GPU window", profile = "whole profile";
  const std::string gaps = "idle gaps in scope; long = over 1 ms", copies = "copies in scope";
  const std::string syncs = "host synchronization calls in scope", step = "steady-state step time";
  const std::string clock = "its clock correction (clock.hpp)";
  static const Table<R> t{
      "/ranks",
      "one row per rank, sorted by rank",
      Distribution::ByRank,
      {col("rank", &R::rank, "", "global training rank"), col("host", &R::host, "", "Hostname of the capture"),
       col("file", &R::file, "", "profile it was read from"),
       col("source_format", &R::source_format, "", "format of the profile (its reader's name)")
           .doc("format of the profile (its reader's name)"),
       col("source_version", &R::source_version, "", "version of the tool that wrote the profile"),
       col("source_schema", &R::source_schema, "", "schema version of the profile's format"),
       col("iteration_source", &R::iteration_source, "", "nvtx, collective_period or none"),
       col("cause", &R::cause, "", "straggler cause, empty if none")
           .doc("`slow_gpu`, `host_delay`, `extra_work`, `slow_link`, `unknown`, or empty"),
       col("device", &R::device, "", "CUDA device ordinal"), col("pid", &R::pid).doc("process id"),
       col("utc_epoch_ns", &R::utc_epoch_ns, "ns").doc("wall clock at t=0"),
       col("gpu_start_ns", &R::gpu_start_ns, "ns").doc("first GPU activity (own clock)"),
       col("gpu_end_ns", &R::gpu_end_ns, "ns").doc("last GPU activity (own clock)"),
       col("steady", &R::steady)
           .doc("1: the figures below cover the steady state (second iteration to the end), 0: the whole GPU window"),
       col("kernel_count", &R::kernel_count).doc(profile), col("nccl_kernel_count", &R::nccl_kernel_count).doc(profile),
       col("copy_count", &R::copy_count).doc(profile), col("gap_count", &R::gap_count).doc(gaps),
       col("long_gap_count", &R::long_gap_count).doc(gaps), col("h2d_bytes", &R::h2d_bytes, "bytes").doc(copies),
       col("d2h_bytes", &R::d2h_bytes, "bytes").doc(copies), col("sync_count", &R::sync_count).doc(syncs),
       col("collective_ops", &R::collective_ops).doc("matched collectives it took part in"),
       col("late_count", &R::late_count).doc("times it arrived last"),
       col("scope_ms", &R::scope_ms, "ms").doc(scope), col("busy_ms", &R::busy_ms, "ms").doc(scope),
       col("compute_ms", &R::compute_ms, "ms").doc(scope), col("nccl_ms", &R::nccl_ms, "ms").doc(scope),
       col("exposed_nccl_ms", &R::exposed_nccl_ms, "ms").doc(scope), col("idle_ms", &R::idle_ms, "ms").doc(scope),
       col("whole_ms", &R::whole_ms, "ms").doc(whole), col("whole_busy_ms", &R::whole_busy_ms, "ms").doc(whole),
       col("whole_idle_ms", &R::whole_idle_ms, "ms").doc(whole), col("long_gap_ms", &R::long_gap_ms, "ms").doc(gaps),
       col("h2d_ms", &R::h2d_ms, "ms").doc(copies), col("d2h_ms", &R::d2h_ms, "ms").doc(copies),
       col("sync_ms", &R::sync_ms, "ms").doc(syncs), col("step_ms_median", &R::step_ms_median, "ms").doc(step),
       col("step_ms_p90", &R::step_ms_p90, "ms").doc(step), col("step_ms_mean", &R::step_ms_mean, "ms").doc(step),
       col("wait_ms", &R::wait_ms, "ms")
           .doc("its waits: last arrival - its arrival, summed over all its matched collectives, warm-up included "
                "(decompose.hpp); equals the sum over `/collectives/arrival_ns`"),
       col("blame_ms", &R::blame_ms, "ms")
           .doc("direct blame: peer time spent waiting for it (sum of the others' waits where it was last)"),
       col("propagated_blame_ms", &R::propagated_blame_ms, "ms")
           .doc("the part of blame_ms it passed on: it came last because it had just waited on another rank "
                "(collectives/root_blame.hpp)"),
       col("root_blame_ms", &R::root_blame_ms, "ms")
           .doc("blame charged to the rank that started each chain of waits: blame_ms - propagated_blame_ms + the "
                "propagated blame of others that started at it (collectives/root_blame.hpp, docs/analyses.md)"),
       col("hold_ms", &R::hold_ms, "ms").doc("time it alone held the others (last - second-to-last arrival)"),
       col("clock_offset_ms", &R::clock_offset_ms, "ms").doc(clock),
       col("late_fraction", &R::late_fraction).doc("share of its matched collectives where it arrived last"),
       col("clock_drift_ppm", &R::clock_drift_ppm, "ppm").doc(clock), col("clock_aligned", &R::clock_aligned).doc(clock),
       col("straggler_score", &R::straggler_score).doc("robust z of its excess own time among its role (verdict.hpp)"),
       col("iterations", &R::iterations).doc("iterations found, warm-up included"),
       // HTA's figures: added after files were written (older files read back NaN: no value).
       col("hta_idle_pct", &R::hta_idle_pct, "%", "Holistic Trace Analysis (HTA) idle time, % of its kernel span")
           .doc("Holistic Trace Analysis' temporal breakdown (get_temporal_breakdown; HTA's definitions: "
                "ranks/hta_breakdown.hpp, docs/metrics.md): idle time, % of the kernel span (first GPU event to "
                "the last, the last ProfilerStep excluded); NaN without GPU events")
           .added(),
       col("hta_compute_pct", &R::hta_compute_pct, "%", "HTA compute time, % of its kernel span")
           .doc("HTA's compute time (union of the kernels HTA's name patterns call computation), % of the kernel span")
           .added(),
       col("hta_non_compute_pct", &R::hta_non_compute_pct, "%", "HTA non-compute time, % of its kernel span")
           .doc("HTA's non-compute time (GPU busy, no computation kernel running: communication, memcpy/memset, "
                "other kernels), % of the kernel span")
           .added(),
       col("hta_comm_overlap_pct", &R::hta_comm_overlap_pct, "%", "HTA communication-computation overlap, %")
           .doc("HTA's communication-computation overlap (get_comm_comp_overlap): communication time with a "
                "computation kernel running, % of communication time; NaN without communication kernels")
           .added()},
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
                          "per rank (row i = `/ranks` row i, columns: the bins of `edges_ns`), in scope",
                          Distribution::ByRank,
                          {computed<H>("kernel_ns", counts<&H::kernel_ns>, "count", d).doc("compute kernel durations"),
                           computed<H>("nccl_kernel_ns", counts<&H::nccl_kernel_ns>, "count", d)
                               .doc("NCCL kernel durations"),
                           computed<H>("idle_gap_ns", counts<&H::idle_gap_ns>, "count", d).doc("idle gaps"),
                           computed<H>("sync_ns", counts<&H::sync_ns>, "count", d).doc("host sync calls")},
                          rank_of<H>};
  return t;
}

const Table<RankHistograms>& summed_histograms_table() {
  static const std::string d = "exact sum over all ranks";
  static const Table<H> t{"/histograms",
                          "the same, summed over all ranks",
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
      "the bins, one row each",
      Distribution::Replicated,
      {col("edges_ns", &HistogramBin::edge_ns, "ns", "lower edge of each bin; bin 0 = [0, 100 ns), the last bin >= 100 s")
           .doc("lower edge of each bin (`[0]` = 0, `[1]` = 100 ns, `[91]` = 100 s)")}};
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
      "long format, one row per rank and iteration (grouped by rank)",
      Distribution::ByRank,
      {col("rank", &I::rank), col("number", &I::number, "", "from the marker name (ProfilerStep#N), else the ordinal"),
       col("start_ns", &I::start_ns, "ns", "on the rank's own clock (+ /ranks/utc_epoch_ns for wall clock)"),
       col("step_ms", &I::step_ms, "ms"), col("warmup", &I::warmup).doc("1: the first iteration of each rank")},
      rank_of<I>};
  return t;
}

}  // namespace straggler::tables
