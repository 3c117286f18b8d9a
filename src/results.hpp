// Result rows: everything the writers (HDF5, summary JSON, report) see; the tables they form are
// declared in src/tables/. Writers never touch timelines or input formats. Built by the driver; identical on every MPI process where noted.
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ranks/histogram.hpp"

namespace straggler {

// One row per analysed rank (sorted by rank in RunResults::ranks).
struct RankRow {
  static constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();
  int32_t rank = -1;
  std::string host, file, iteration_source;
  std::string source_format, source_version, source_schema;  // RankTimeline::source
  int32_t device = -1;
  int64_t pid = -1;
  int64_t utc_epoch_ns = 0;
  int64_t gpu_start_ns = 0, gpu_end_ns = 0;  // own clock; + utc_epoch_ns for wall clock
  uint8_t steady = 0;                         // figures below cover the steady state (else whole window)
  int64_t kernel_count = 0, nccl_kernel_count = 0, copy_count = 0;
  double scope_ms = 0, busy_ms = 0, compute_ms = 0, nccl_ms = 0, exposed_nccl_ms = 0, idle_ms = 0;
  double whole_ms = 0, whole_busy_ms = 0, whole_idle_ms = 0;
  int64_t gap_count = 0, long_gap_count = 0;
  double long_gap_ms = 0;
  int64_t h2d_bytes = 0, d2h_bytes = 0;
  double h2d_ms = 0, d2h_ms = 0;
  int64_t sync_count = 0;
  double sync_ms = 0;
  int32_t iterations = 0;  // found, warm-up included
  double step_ms_median = 0, step_ms_p90 = 0, step_ms_mean = 0;
  // Holistic Trace Analysis' figures (ranks/hta_breakdown.hpp), in %; NaN where HTA has none (and
  // in files written before they were added).
  double hta_idle_pct = kNoValue, hta_compute_pct = kNoValue, hta_non_compute_pct = kNoValue;
  double hta_comm_overlap_pct = kNoValue;
  // Cross-rank analysis (collectives/): definitions in collectives/include/collectives/decompose.hpp
  // and verdict.hpp.
  int64_t collective_ops = 0, late_count = 0;
  double late_fraction = 0, wait_ms = 0, blame_ms = 0, hold_ms = 0;
  double propagated_blame_ms = 0, root_blame_ms = 0;  // collectives/root_blame.hpp
  double clock_offset_ms = 0, clock_drift_ppm = 0;
  uint8_t clock_aligned = 0;
  double straggler_score = 0;
  std::string cause;  // "" unless a straggler
};

struct TopKernelRow {
  int32_t rank = -1;
  int32_t position = 0;  // 0 = largest total time
  std::string name;
  uint8_t nccl = 0;
  int64_t count = 0;
  double total_ms = 0, mean_ms = 0, max_ms = 0;
};

struct IterationRow {
  int32_t rank = -1;
  int64_t number = 0;
  int64_t start_ns = 0;  // own clock
  double step_ms = 0;
  uint8_t warmup = 0;
};

// Per-rank duration histograms (LogHistogram bins).
struct RankHistograms {
  int32_t rank = -1;
  ranks::LogHistogram kernel_ns, nccl_kernel_ns, idle_gap_ns, sync_ns;
};

struct FailureRow {
  int32_t rank = -1;  // -1 when unknown
  std::string file, error;
};

struct InputFile {
  std::string path, format, version, schema;  // RankTimeline::source of its rank processes
  int32_t ranks = 0;  // rank processes found in it
};

// A part of the stdout report an analysis contributes (Analysis::report): printed after the
// header, the parts in this order, each part's sections in registry order.
enum class ReportPart : uint8_t { Verdict, Measurements, Inputs };
struct ReportSection {
  ReportPart part = ReportPart::Measurements;
  std::string text;  // "" for none; whole lines
};

// What one process contributes; `ranks`, `top_kernels`, `iterations`, `histograms` hold only the
// rows this process computed, each list sorted by rank. Counts and offsets of every process are
// exchanged so each can write its rows at their global position.
struct RunResults {
  std::vector<RankRow> ranks;
  std::vector<TopKernelRow> top_kernels;
  std::vector<IterationRow> iterations;
  std::vector<RankHistograms> histograms;
  // Identical on every process:
  std::vector<FailureRow> failures;
  std::vector<InputFile> inputs;
  std::vector<std::string> hosts;  // distinct, sorted
  std::string command_line;
  int32_t total_ranks = 0;
  int32_t world = 0;  // highest rank + 1
  // The cross-rank analysis (communicators, clocks, verdict): identical on every process, except
  // the per-communicator replays, held by each communicator's owner.
  const struct CrossRankResults* cross = nullptr;
};

}  // namespace straggler
