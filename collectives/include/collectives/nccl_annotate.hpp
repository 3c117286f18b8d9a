// What NCCL did in one rank's timeline, from facts every reader provides (kernel names, launch
// calls and their threads, annotation ranges with their domain): a format-independent pass run
// after any reader, so that no reader needs to know NCCL.
#pragma once
#include <string>
#include <vector>

#include "ranks/timeline.hpp"

namespace collectives {

// Fills the annotation columns of `tl` (see ranks/timeline.hpp):
//  * kernels.is_nccl: NCCL communication kernels, by name (classify_nccl_kernel);
//  * nvtx.nccl_domain: ranges in the domain named "NCCL", or, where the file lost the domain's
//    name (time-window cuts drop the create rows), in another non-default domain with an NCCL API
//    name (ncclAllReduce, ncclGroupEnd, ...);
//  * kernels.nccl_api: the NCCL API call that issued each NCCL kernel: the innermost NCCL range
//    around its launch on the launching thread; for a group, the last collective call inside
//    ncclGroupStart/End;
//  * pending_nccl: launches without a kernel record that an NCCL range owns (inside it, or the
//    first launch after a range holding none; a rank blocked in a collective); unfinished_launches:
//    the other launches without a kernel record (host callbacks excepted), for pending_ops to
//    place by the launch sequence when no range owns a pending launch;
//  * nccl_launch_apis: the launch calls that issued completed NCCL kernels.
void annotate_nccl(ranks::RankTimeline& tl);

// A profile as every analysis sees it: read by the reader its first bytes pick
// (ranks::read_profile), then annotated. The one way the driver reads; meaning after reading is
// not a step a caller can forget (compute_metrics refuses a timeline that skipped it).
std::vector<ranks::RankTimeline> read_annotated(const std::string& path);

}  // namespace collectives
