// Profiles that do not belong to one run (issue 23): captures of different runs put in one folder
// merge silently into one "job" otherwise. Two physical facts of one training job, checked on what
// every export records (TARGET_INFO_SESSION_START_TIME's wall clock, the host name and the CUDA
// device of each process):
//  * its ranks run at the same time: their capture windows on the wall clock overlap (hosts' NTP
//    skew is milliseconds; a job's captures last seconds or more), or lie within
//    kMaxHostClockErrorNs of each other (a host clock far off, which its collectives then align);
//  * one GPU runs one rank: two processes of different files on the same host and physical GPU are
//    two runs (or a GPU shared, which is then worth saying). The physical GPU is its PCI bus id
//    where the export records one (TARGET_INFO_GPU / TARGET_INFO_CUDA_DEVICE); a CUDA ordinal is
//    per process, so without a bus id two ranks' ordinals are compared only on a host whose ranks
//    show several distinct ordinals (processes that see all its GPUs). Every rank on device 0
//    (CUDA_VISIBLE_DEVICES per rank) is the common case and says nothing (issue 37).
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
