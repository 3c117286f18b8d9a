// Root-cause findings across ranks (the per-rank ones are ranks/findings.hpp):
//  * comm_imbalance: a rank whose compute per step exceeds the median of its role's peers by
//    >= 3% of the job's median step, while it waits in collectives less than they do by at least
//    half that excess (it is the one they wait for: asymmetric waits). Medians over the steady
//    iterations before the first desync. Cost: its extra compute per step. Where a distinguishing
//    finding of the rank's own (below) costs >= half that excess (tiny kernels), that finding is
//    the cause: its evidence tells the imbalance, and no comm_imbalance row is added.
//  * tie to the verdict: a straggler's distinguishing findings are those whose cost on it is
//    >= 1.5x its role peers' median cost of the same finding (0 where a peer lacks it) and
//    >= 0.5% of the median step; the costliest host-side one refines a host_delay cause
//    (cause_detail), and the evidence line names them.
//  * the job's inefficiencies: findings held by more than half of the ranks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/verdict.hpp"
#include "ranks/findings.hpp"

namespace collectives {

struct RootCauseOptions {
  double imbalance_excess = 0.03;   // extra compute per step, share of the median step
  double imbalance_wait = 0.5;      // waits less than peers by this share of the excess
  double imbalance_explained = 0.5; // an own finding costing this share of the excess explains it
  double distinguish_ratio = 1.5;   // straggler's cost over its peers' median cost
  double distinguish_min = 0.005;   // ... and at least this share of the median step
  double shared_share = 0.5;        // a job inefficiency: held by more than this share of the ranks
};

// Adds the comm_imbalance rows to the ranks' findings (kept in finding order), or the imbalance to
// the evidence of the finding that explains it; `clean_iterations` as for decide().
void add_imbalance_findings(std::vector<RankEvidence>& ranks, size_t clean_iterations = SIZE_MAX,
                            const RootCauseOptions& opt = {});

// Fills each straggler's findings, cause_detail and evidence from the ranks' findings
// (RankEvidence::findings, comm_imbalance included).
void tie_findings(Verdict& v, const std::vector<RankEvidence>& ranks, const RootCauseOptions& opt = {});

// One line per finding over all ranks: its ranks, costliest first.
struct FindingSummary {
  ranks::Finding finding = ranks::Finding::None;
  std::vector<int32_t> ranks;
  double cost_ms_per_step = 0;         // the largest over its ranks
  double median_cost_ms_per_step = 0;  // over its ranks
  std::string evidence;                // the costliest rank's
  std::string unit = "step";           // what the costs are per (the costliest rank's: RankFinding::unit)
  bool shared = false;                 // held by > shared_share of the ranks: the job's own
  // charge_findings: the one cost (docs/costs.md) as % of the median step, and what it rests on.
  double cost_pct = std::numeric_limits<double>::quiet_NaN();
  double own_ms_per_step = 0;  // the finding's own figure (cost_ms_per_step before charge_findings)
  std::string cost_basis = "own";  // "replay": its straggler ranks' what-if costs; "own": its own figure
};
std::vector<FindingSummary> summarize_findings(const std::vector<ranks::RankFinding>& rows, size_t total_ranks,
                                               const RootCauseOptions& opt = {});
// One cost per problem: a finding that leads a straggler (its cause_detail, else its first
// finding) costs what the straggler costs the job (the what-if replay's, Straggler::cost_ms_per_step,
// summed over such ranks), not its own figure, which stays as own_ms_per_step; the others keep
// their own figure. Sets cost_pct of `step_ms` (the what-if's last phase, the stragglers' base; the
// median step when 0) and re-sorts, costliest first.
void charge_findings(std::vector<FindingSummary>& rows, const Verdict& v, double step_ms);

}  // namespace collectives
