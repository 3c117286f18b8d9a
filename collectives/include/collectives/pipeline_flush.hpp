// One rank's pipeline flushes, measured where its profile is read: the compact per-flush records
// the pipeline analysis (src/analyses/pipeline.cpp, docs/pipeline.md) exchanges, never kernels.
//
// What it relies on, and where that is promised:
//  * A pipeline schedule (GPipe, 1F1B, interleaved 1F1B: Megatron's schedules.py) moves every
//    microbatch between stages with NCCL point-to-point kernels (SendRecv in the kernel name or the
//    ncclSend / ncclRecv API range); a stage computes between them. The p2p ops of one flush repeat
//    every iteration in the same number (K per iteration, counted over the rank's iterations).
//  * Iteration boundaries do not mark flushes: without step markers they fall wherever the NCCL
//    sequence repeats, often mid-flush. The flush boundary is found from the ops (below).
//  * "Between two p2p ops" is in the order the host launched them (the CUDA runtime records'
//    start, tied to each kernel by its correlation id; CUPTI), not in the kernels' starts: a p2p
//    kernel on its own stream waits only for work launched before it (CUDA stream and event
//    semantics) and may start while the next forward already runs. Where a file has no launch
//    records, or a CUDA graph launch starts many kernels with one call, kernel starts stand in.
//  * The first stage's first forward runs before its first p2p op of a flush and its last backward
//    after its last one. A forward (backward) of one model chunk launches the same compute kernels
//    for every microbatch, so the first stage's first forward is the `fwd_kernels` compute kernels
//    before its first p2p op, where fwd_kernels counts the first non-empty interval between its p2p
//    ops (the second forward); its last backward launches the names of the flush's later
//    intervals (a receive launched ahead leaves a forward in the last one). Between two flushes it
//    runs its last backward, the optimizer and its next first forward: the interval between p2p
//    ops with the most compute kernels (counts are exact where times are noisy); ties go to the
//    longest gap.
//  * Collectives of a stage's microbatches (TP all-reduces, sequence-parallel gathers, expert
//    all-to-all) run in its forward and backward passes, between most pairs of its p2p ops that
//    hold compute; data-parallel gradient collectives run once per flush. A non-p2p NCCL stream is
//    microbatch work when it has ops in more than half of those intervals.
// A later stage's flush is not found from its own ops (a receive posted early hides the wait
// that marks the flush boundary): the cross-rank analysis takes the p2p ops of that stage that
// end inside the first stage's flush (causality: its first activation arrives after the first
// stage's first forward, its last gradient leaves before the first stage's last backward). Each
// rank therefore ships, per p2p op, its end and the cumulative work and exposed p2p time there.
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/collective_op.hpp"
#include "ranks/metrics.hpp"
#include "ranks/timeline.hpp"

namespace collectives {

// The rank's flushes measured as if it were the first stage.
struct FlushWindow {
  int32_t rank = -1;
  int32_t flush = 0;      // ordinal among the rank's complete flushes
  int32_t iteration = -1; // index into the rank's iterations of the one holding its first p2p op
  uint8_t steady = 0;     // that iteration is a steady one (not warm-up) and not the last, cut one
  int64_t fill_start = 0, drain_end = 0;  // first forward's start .. last backward's end (wall clock, uncorrected)
  double work_ns = 0;     // compute or microbatch collectives, union, within the window
  double p2p_ns = 0;      // p2p kernel time within the window not overlapped by work
  int32_t p2p_ops = 0;    // p2p ops in the flush (K)
  int32_t kernels = 0;    // compute kernels starting in the window
  int32_t fwd_kernels = 0, bwd_kernels = 0;  // compute kernels of one forward / one backward (chunk)
  int32_t leading_fwd = 0;  // forwards before its longest wait (for the first backward's gradient)
  int32_t forwards = 0;     // chunk forwards in the flush, by kernel names (0: names do not tell)
};

// A p2p op's end and, at that instant, the rank's cumulative work and exposed p2p time (ns since
// its first kernel): work in any window between two op ends is a difference.
struct P2pMark {
  int32_t rank = -1;
  int64_t end = 0;  // wall clock, uncorrected
  double work_ns = 0, p2p_ns = 0;
};

struct RankFlushes {
  std::vector<FlushWindow> flushes;
  std::vector<P2pMark> marks;  // by end
};

// The rank's complete flushes, in time order (empty: no p2p ops, no iterations, or no
// repetition), and its marks (empty without p2p ops).
RankFlushes pipeline_flushes(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                                          const std::vector<ranks::Iteration>& its);

}  // namespace collectives
