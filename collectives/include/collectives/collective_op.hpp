// CollectiveOp: one NCCL kernel of one rank as a compact record. These records, never raw
// events, are what crosses MPI process boundaries for the cross-rank analyses.
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/nccl_kernel.hpp"
#include "ranks/metrics.hpp"
#include "ranks/timeline.hpp"

namespace collectives {

struct CollectiveOp {
  int64_t start = 0, end = 0;  // wall clock of the rank's host: utc_epoch_ns + own time (ns)
  int32_t rank = -1;
  int32_t stream = 0;          // the rank's CUDA stream: NCCL runs one per communicator
  uint32_t seq = 0;            // issue order on that stream
  int32_t iteration = -1;      // index into the rank's iterations (-1: before the first)
  CollectiveType type = CollectiveType::Unknown;
  NcclDtype dtype = NcclDtype::Unknown;
};

// Every NCCL kernel of the timeline, in start order per stream (seq = position on its stream).
// The collective type comes from the kernel name, else from the NCCL API range that issued it.
std::vector<CollectiveOp> extract_ops(const ranks::RankTimeline& tl, const std::vector<ranks::Iteration>& its,
                                      int rank);

// NCCL launches that never completed (RankTimeline::pending_nccl), placed on their stream: the
// stream whose op comes next in the order the rank issued its collectives in its last complete
// iteration. Launches less than `min_age_ns` before the capture ended are ignored (a capture cut
// mid-collective is not a hang). Returns (stream, seq) pairs.
struct PendingOp {
  int32_t stream = 0;
  uint32_t seq = 0;
};
std::vector<PendingOp> pending_ops(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                                   const std::vector<ranks::Iteration>& its, int64_t min_age_ns = 1'000'000'000);

}  // namespace collectives
