// Problems, not ranks (issue 37; docs/summary-contract.md, `problems`): what is wrong, by place,
// with one cost each. Built from what the verdict, the desync search and the what-if replay already
// decided, so a scan read back (`report SCAN.h5`) gives the same problems as the scan that wrote it.
#pragma once
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace straggler {

struct CrossRankResults;
struct RankRow;

struct ProblemShare {
  int32_t rank = -1;
  double ms_per_step = 0;
};

struct Problem {
  std::string cause;                   // slow_gpu, host_delay, extra_work, slow_link, unknown, stall, crash, hang
  std::string place_kind, place_name;  // rank | host | hosts | every_rank
  std::vector<int32_t> ranks, blocked_ranks;
  bool stopped_in_launch = false;  // crash: found by a launch of its own that never finished (DesyncRow)
  std::vector<std::string> hosts;
  size_t host_ranks = 0;  // place host: how many ranks the host holds
  // onset_iteration: 0 = the first iteration in the capture (the contract's numbering, as desync
  // rows'); onset_number: the same iteration by its marker (ProfilerStep#N), for the text.
  int64_t onset_iteration = -1, iterations_after_onset = 0, onset_number = -1;
  double period_iterations = NAN;
  double cost_ms_per_step = NAN, cost_pct = NAN, step_ms_without = NAN;
  std::vector<ProblemShare> shares;  // add up to the cost
  std::string finding, evidence;
  // What the cost is per: "step" (step markers), else "repeating unit" (the collective period).
  std::string unit = "step";
  std::vector<size_t> stragglers;  // the verdict's rows it stands for (place host: several)
};

// Costliest first; a crash or hang (the run ended there) before all.
std::vector<Problem> build_problems(const CrossRankResults& x, const std::vector<RankRow>& ranks);
std::string problems_json(const std::vector<Problem>& problems);
// How the ranks that stopped by themselves stopped (the crash and hang problems): ": it crashed
// (its capture ended first, the others stayed blocked) in iteration 7; 15 ranks left waiting".
std::string how_stopped(const std::vector<Problem>& problems);
// "node-02: 4 of its 4 GPUs (ranks 8, 9, 10, 11) slow_gpu since iteration 4, 14.9% of the step"
std::string problem_headline(const Problem& p);
// The block of a problem that stands for several stragglers (one rank's keeps its STRAGGLER block).
void print_problem(std::ostream& os, const Problem& p);

}  // namespace straggler
