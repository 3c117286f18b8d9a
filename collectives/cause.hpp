// The cause of a straggler from its evidence (cause.cpp; a private header of collectives/verdict.cpp):
// its kernels against its role peers' (or its own iterations before a change, where its peers
// slowed with it), its work, its transfers and its GPU idle.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/verdict.hpp"

namespace collectives::verdict_detail {

// Mean over iterations [from, to) of a per-iteration series (skipping the warm-up, index 0).
double mean_from(const std::vector<double>& v, size_t from, size_t to);
// The iteration number of an iteration index of the rank (the index where it has none).
int64_t number(const RankEvidence& r, size_t index);

// What it is judged on beside its kernels (see cause_of).
struct CauseInput {
  size_t from = 0, to = 0;  // iteration indexes
  bool own_baseline = false;  // named against its own iterations before a job change point
  double link_ratio = 0;    // its slowest communicator against its like
  double extra_transfer_ms = 0, excess_ms_per_it = 0;
};

// Its cause over iteration indexes [in.from, in.to), its evidence in words; `own_slowdown` is set
// where the slow GPU was read against its own iterations (Straggler::own_slowdown).
Cause cause_of(const RankEvidence& r, const std::vector<const RankEvidence*>& peers, const CauseInput& in,
               const VerdictOptions& opt, std::string& evidence, double& own_slowdown);

}  // namespace collectives::verdict_detail
