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
  int64_t launch = 0;          // wall clock of the launching API call; start when unknown
  int32_t rank = -1;
  int32_t stream = 0;          // the rank's CUDA stream: NCCL runs one per communicator
  uint32_t seq = 0;            // issue order on that stream
  int32_t iteration = -1;      // index into the rank's iterations (-1: before the first)
  CollectiveType type = CollectiveType::Unknown;
  NcclDtype dtype = NcclDtype::Unknown;
  // Share of the kernel's time during which a compute (non-NCCL) kernel of the rank runs, in
  // 1/255: a gradient bucket waiting on the DP stream while the backward goes on costs the rank
  // nothing (replay.hpp: exposed wait). Nothing promises what else the GPU does meanwhile; it is
  // measured here.
  uint8_t overlap = 0;
  // On a p2p link of shared streams: paired because its exchange completed inside the partner's
  // grouped kernel, not because both ended together; its end is the exchange's (keep_link_ops).
  // Its end says nothing about the clocks. Set where the op is decoded, not shipped in op records.
  bool grouped_exchange = false;
  // Message size of one rank's buffer from NCCL's NVTX payload (RankTimeline kernels' nccl_bytes),
  // -1 when the export has none.
  int64_t bytes = -1;
  // NCCL's communicator id from the same payload (its commHash, equal on every member), 0 when
  // unknown. Used where the op is read (communicator inference), not shipped in op records.
  uint64_t comm = 0;
};

// Every NCCL kernel of the timeline, in start order per stream (seq = position on its stream).
// The collective type comes from the kernel name, else from the NCCL API range that issued it.
std::vector<CollectiveOp> extract_ops(const ranks::RankTimeline& tl, const std::vector<ranks::Iteration>& its,
                                      int rank);

// NCCL launches that never completed (RankTimeline::pending_nccl), placed on their stream. One
// launch thread issues a rank's collectives in the same order every iteration, so with its ops in
// launch (issue) order and P ops per iteration, the op at issue position N (the first never
// completed) is on the stream of the op at position N - P, one iteration earlier. P is counted over
// the last full iteration (between the starts of the last two). Without iterations (no step
// markers, too few repetitions to infer them) the position whose preceding issue sequence best
// matches the one before N stands in for N - P. A candidate must fit the launch's NCCL API (an
// all-reduce call is not placed on a send/recv stream). Issue order is by launch call, not kernel
// start: p2p kernels of two links often start at the same instant. Launches less than
// `min_age_ns` before the capture ended are ignored (a capture cut mid-collective is not a hang),
// and so are launches a completed NCCL kernel without a launch record (its correlationId lost)
// starting at or after them may belong to, one kernel per launch. Launches of unknown time
// (kNoTime) are skipped. At most 256 launches are placed; every index is bounds-checked (D1).
//
// Without NCCL NVTX ranges (NCCL_NVTX_DISABLE=1, NVTX not traced: pending_nccl empty) the
// process's launches without a kernel record (RankTimeline::unfinished_launches) stand in. CUPTI
// writes a kernel record when the kernel completes, so a launch that has none although the capture
// went on for longer than `min_age_ns`, while the rank's GPU sat idle that long (a blocked rank
// soon runs out of work that does not depend on the collective), is a kernel that never finished;
// NCCL kernels are the ones that block on peers. Which kernel it was comes from its place in the
// rank's whole launch sequence (kernel name and stream of every completed launch): the earlier
// position whose preceding launches match those before it the longest, one iteration back. It is a
// pending op on stream s only if that kernel is an NCCL kernel on s, no op launched later on s
// completed (a stream runs in order: otherwise the record was lost, the kernel not stuck), and its
// launch call is one this process launched NCCL kernels with (a veto only: compute kernels use the
// same calls). At most one per stream.
// The hang margin, defined once: the least margin between the present members' arrival and a
// missing member's capture end (replay.hpp, Desync), and the age a pending launch needs to count
// as stuck (pending_ops, CrossRankInput::stuck).
inline constexpr int64_t kMinHangMarginNs = 1'000'000'000;

// Returns (stream, seq, launch) triples.
struct PendingOp {
  int32_t stream = 0;
  uint32_t seq = 0;
  int64_t launch = 0;  // wall clock of the launch call
};
std::vector<PendingOp> pending_ops(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                                   const std::vector<ranks::Iteration>& its, int64_t min_age_ns = kMinHangMarginNs);

}  // namespace collectives
