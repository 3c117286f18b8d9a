// Turning per-rank metrics into result rows, and moving rows between processes.
#pragma once

#include "ranks/metrics.hpp"
#include "ranks/timeline.hpp"
#include "cross_rank.hpp"
#include "results.hpp"
#include "transport.hpp"

namespace straggler {

struct RankOutputs {
  RankRow row;
  std::vector<TopKernelRow> top_kernels;
  std::vector<IterationRow> iterations;
  RankHistograms histograms;
};

RankOutputs make_rank_outputs(const ranks::RankTimeline& tl, const ranks::RankMetrics& m);
void set_rank(RankOutputs& o, int rank);
void sort_by_rank(RunResults& r);
// Cross-rank figures into this process's rank rows.
void apply_cross_rank(RunResults& r, const CrossRankResults& x);
// Distinct host names over all processes, sorted.
std::vector<std::string> gather_hosts(Transport& t, const std::vector<RankRow>& mine);

// Everything the report and the summary need, on one process.
struct RunSummaryInput {
  std::vector<RankRow> ranks;         // all ranks, sorted
  std::vector<double> steady_step_ms; // every steady-state iteration of every rank
  std::vector<FailureRow> failures;
  std::vector<InputFile> inputs;
  std::vector<std::string> hosts;
  int32_t total_ranks = 0;
  const CrossRankResults* cross = nullptr;  // identical on every process
  std::vector<std::pair<std::string, std::string>> analysis_keys;  // Analysis::summary of each analysis
  std::vector<ReportSection> report_sections;                      // Analysis::report of each, non-empty
};
RunSummaryInput gather_summary_input(Transport& t, const RunResults& local, int root);

}  // namespace straggler
