// Profiles that do not belong to one run (issue 23): captures of different runs put in one folder
// merge silently into one "job" otherwise. Two physical facts of one training job, checked on what
// every export records (TARGET_INFO_SESSION_START_TIME's wall clock, the host name and the CUDA
// device of each process):
//  * its ranks run at the same time: their capture windows on the wall clock overlap (hosts' NTP
//    skew is milliseconds; a job's captures last seconds or more), or lie within
//    kMaxHostClockErrorNs of each other (a host clock far off, which its collectives then align);
//  * one GPU runs one rank: two processes of different files on the same host and CUDA device are
//    two runs (or a GPU shared, which is then worth saying).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ranks/discovery.hpp"
#include "ranks/rank_assignment.hpp"

namespace ranks {

// The largest clock error between a job's hosts that straggler-scan still aligns (from their
// collectives: collectives/host_clocks.hpp): captures apart by less may be one job's.
inline constexpr int64_t kMaxHostClockErrorNs = int64_t(60) * 1'000'000'000;

// One line per problem found, naming the files (printable); empty when the profiles fit together.
// `rank`: Assignment::rank (only accepted processes are compared).
std::vector<std::string> belonging_problems(const Discovery& d, const std::vector<FoundProcess>& found,
                                            const std::vector<int>& rank);

}  // namespace ranks
