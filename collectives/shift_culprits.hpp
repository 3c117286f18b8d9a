// Change points of the job's step time: the ranks whose own time rose there against their own
// baseline, and the explanation each change point gets
// (verdict.hpp, "Who"; a private header of collectives/verdict.cpp).
//
// The role comparison (a rank against the median of its stage peers) fails when many peers change
// at once: a whole node degraded holds half of its stage's ranks in a 16-rank job, and the stage
// median moves with them. A rank's own time (its step less its exposed waits in collectives) does
// not move when it only waits longer for others, so at a change point of the job's step the ranks
// whose own time rose by as much as the job's step did are the ones that changed, whatever their
// peers did. Each is judged against its own iterations before the change, the shift against the
// spread of the lower half of the ranks' shifts (the ranks that did not change: a host that is a
// whole pipeline stage is half of a 16-rank job, and the median and MAD of all shifts would sit
// between the two groups; a change of more than half the ranks is the job's own, not a problem of
// some ranks), and it must hold in the iterations after the change
// (all but a quarter of them): the change point is the job's, found once, not picked per rank, so
// no correction for picking is due, and a late onset with 3 iterations left is judged on those 3
// (the verdict says how many it had).
#pragma once
#include <cstddef>
#include <vector>

#include "collectives/verdict.hpp"

namespace collectives {

struct ShiftOptions {
  double z = 8;               // robust z of a rank's shift among all ranks' shifts
  double spread_floor = 0.005;  // MAD floor: share of the job's mean step
  double of_job = 0.5;        // its shift >= this share of the job's step shift
  double min_share = 0.01;    // ... and >= this share of the job's mean step
  double hold = 0.5;          // an iteration after holds it when own - baseline >= this share of the shift
  size_t min_before = 2;      // iterations of baseline needed
};

struct ShiftCulprit {
  size_t rank_index = 0;  // into the own matrix
  size_t at = 0;          // iteration index its own time shifted at (the change, or the one after)
  size_t change = 0;      // which of change_at
  double z = 0;
  // Its shift holds (ShiftOptions::hold) in the two iterations from `at` on: false for a culprit whose
  // own slowdown came later (another fault made this change), whose later shift the median after
  // `at` shows, not its first iterations.
  bool prompt = false;
};

// own[r][i]: rank r's own time in iteration index i (ms), i in [0, common); index 0 is warm-up.
// job_step_ms[i]: the job's step; `change_at`: iteration indexes where the job's step shifted up.
std::vector<ShiftCulprit> shift_culprits(const std::vector<std::vector<double>>& own, const std::vector<double>& job_step_ms,
                                         size_t common, const std::vector<size_t>& change_at, const ShiftOptions& opt = {});

// Every shift of the job's step time gets an explanation (JobChangePoint::explanation).
void explain_change_points(Verdict& v);

}  // namespace collectives
