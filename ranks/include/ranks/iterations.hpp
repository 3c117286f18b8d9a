// The marker-less fallback of find_iterations (metrics.hpp): the repeating unit of the NCCL sequence.
//  * the sequence in launch order where every launch is known (the host issues a step's
//    collectives in program order; their start order across streams moves with the GPU's timing,
//    e.g. overlapped gradient buckets among the backward's TP all-reduces), else in start order;
//    the gaps stay between kernel starts (timed by launch, a host that runs ahead of the GPU makes
//    a microbatch look like a regular unit);
//  * candidates: multiples of the smallest period of the (kernel name, stream) sequence (at most 2%
//    mismatches, at least 3 repetitions);
//  * timing score of a period p: sum |g[j+p] - g[j]| / sum (g[j] + g[j+p]) / 2 over the gaps g between
//    the times the sequence reaches consecutive positions (the running maximum of the starts), leaving out the first unit's gaps (warm-up) when 3 units follow
//    it, and the largest kTrimShare of the differences (occasional host stalls). It is near 0 when
//    the timing repeats every p collectives and stays
//    high at a sub-period (6.3 / 10.4 ms alternating gaps score ~0.4 at p = 1);
//  * chosen: the smallest candidate scoring under kRegularScore, or at most kSubPeriodRatio x the
//    best larger candidate; none when that score is above kIrregularScore (iterations unknown).
// A unit ends where its last collective ends (members of a collective finish together) and runs
// from the previous unit's end; the first from its first collective's start (warm-up). A trailing
// unit with fewer collectives, which the capture cut off, is not an iteration.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ranks/timeline.hpp"

namespace ranks {

inline constexpr double kSubPeriodRatio = 1.3;   // a multiple this much more regular wins
inline constexpr double kExactScore = 0.02;      // timing repeats to 2%: no need to look further
// Regular enough to be the unit whatever its multiples score: a multiple that merely repeats a
// rank's own slow drift (e.g. after a fault's onset) must not double one rank's unit. A true
// sub-period (FSDP's alternating 6.3 / 10.4 ms gaps) scores 0.2-0.45, above it.
inline constexpr double kRegularScore = 0.15;
inline constexpr double kIrregularScore = 0.25;  // above: no regular repeating unit
inline constexpr double kTrimShare = 0.05;       // share of gap pairs left out of the timing score

struct CollectivePeriod {
  size_t period = 0;       // collectives per repeating unit; 0 = no regular unit
  size_t name_period = 0;  // smallest period of the name/stream sequence alone (0 = none)
  double score = 0;        // timing score of the chosen (or, if none, the best) period
};

// keys: one per collective in start order (name and stream); starts: their start times.
CollectivePeriod choose_collective_period(const std::vector<uint64_t>& keys, const std::vector<int64_t>& starts);

// The period find_iterations uses for this rank when it has no markers, with the collectives it
// counted (all NCCL kernels, or those of the busiest stream when all together have no period).
CollectivePeriod collective_period_of(const RankTimeline& tl, std::vector<size_t>* rows = nullptr);

}  // namespace ranks
