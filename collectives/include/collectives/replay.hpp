// Replay of one communicator (done by the process that owns it): match op k across members,
// check that members agree, estimate clock edges, and decompose every matched op.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/clock.hpp"
#include "collectives/collective_op.hpp"
#include "collectives/communicators.hpp"
#include "collectives/decompose.hpp"
#include "ranks/histogram.hpp"

namespace collectives {

// What one member contributes: its ops on the communicator's stream, in seq order.
struct MemberOps {
  int32_t rank = -1;
  std::vector<CollectiveOp> ops;
  int64_t capture_end = 0;   // wall clock end of the member's capture
  bool pending_next = false;  // it launched op ops.size() but the kernel never completed
  int64_t pending_launch = 0;  // wall clock of that launch (0: unknown)
};

// Per-rank sums over the ops of one or more communicators (indexed by global rank).
struct RankAccumulator {
  std::vector<double> ops, late, wait_ns, blame_ns, hold_ns, transfer_ns;
  // [rank][iteration index]: blame of ops where it was last; its own exposed waits (each wait x
  // the share of its kernel that no compute kernel of the rank overlaps, CollectiveOp::overlap)
  std::vector<std::vector<double>> blame_by_iteration, wait_by_iteration;
  // Over all matched ops (every member's wait; each op's skew and transfer), in ns.
  ranks::LogHistogram wait_hist, skew_hist, transfer_hist;
  explicit RankAccumulator(int world = 0);
  void add(const RankAccumulator& o);
};

struct OpRow {
  uint32_t seq = 0;
  CollectiveType type = CollectiveType::Unknown;
  int32_t last_rank = -1;
  int32_t iteration = -1;         // iteration index on the last arriver
  int64_t first_arrival = 0;      // corrected ns
  int64_t skew = 0, transfer = 0, hold = 0, blame = 0;
  int64_t bytes = -1;             // message size of one rank's buffer (the members' largest; -1: unknown)
  double busbw_gbps = 0;          // bandwidth.hpp, over the transfer time; NaN when the size is unknown
};

// The first op of a communicator that not every member reached. `seq` numbers the ops of this
// communicator's stream (its CUDA stream on every member): for a pipeline link "pp-N:s-t" that
// is the link's own p2p count, not a count over the whole pipeline group. A member's position in
// the group's p2p sequence is the sum of its ops over all links of the group it is on (a last or
// first stage has one link, so there both numbers are equal).
//
// Missing or merely not captured? Members that completed or launched the op ("present") show when
// it was reached. A member without it "never reached" it only if its own capture (clock-corrected
// end) went on past the last present arrival by more than `hang_margin_ns` (CommReplay): twice the
// longest quiet gap between consecutive ops of the communicator in normal operation (a healthy
// member would have arrived by then), at least kMinHangMarginNs. A real hang leaves the stuck
// member's capture running until the job is killed (the NCCL watchdog: minutes), long past that;
// a capture that stopped (a profiler duration limit, a crash of the profiler, a trimmed export) ends near its
// own last activity.
//
// Crash: a member whose capture ended before the op (not "went on") is still missing, and a
// root cause, when nobody completed the op and a member blocked in it stayed blocked longer than
// the margin and was recorded past the missing member's capture end by more than the margin. A
// crashed rank's report ends where it died, while its peers wait in their next collective until
// the watchdog or the job kill (tens of seconds). Captures that merely end at different moments
// leave nobody blocked that long. Otherwise the member's capture ended: that goes to
// CommReplay::capture_ended, not to desync.
struct Desync {
  uint32_t seq = 0;                  // first op some members never reached (this stream's count)
  CollectiveType type = CollectiveType::Unknown;
  std::vector<int32_t> missing_ranks;  // members whose capture went on without them reaching it
  std::vector<int32_t> blocked_ranks;  // members that launched it and never finished
  std::vector<int32_t> crashed_ranks;  // of missing_ranks: capture ended first, the others blocked on
  int32_t iteration = -1;  // iteration index of the op on the members that reached it (earliest)
};


struct CommReplay {
  std::vector<OpRow> ops;                     // matched ops
  std::vector<std::vector<int64_t>> arrival;  // [op][member], corrected ns
  std::vector<ClockEdge> edges;               // member i vs member 0 (uncorrected ends)
  int64_t mismatch_seq = -1;                  // first op whose members disagree on the type
  std::string mismatch;                       // what disagreed
  std::vector<Desync> desync;                 // at most one: the first op not reached by all
  // At most one: the first op some members lack only because their capture ended before they
  // could have reached it (missing_ranks: those members; blocked_ranks: members waiting in it).
  // Not a desync: matching stops there.
  std::vector<Desync> capture_ended;
  int64_t hang_margin_ns = 0;                 // the margin used (see Desync)
  double median_transfer_ns = 0;
  int64_t clock_violations_before = 0, clock_violations_after = 0;
};

// A p2p link whose two member streams also serve another link (Communicator::shared): keeps the
// ops whose ends coincide at `offset_ns` (end(member 0) - end(member 1)) within `tolerance_ns`
// (each send has one receiver and both ends finish together), and the ops whose exchange
// completed inside the partner's grouped kernel (CollectiveOp::grouped_exchange), renumbered; a
// member's pending launch stays when the stream's repeating pattern of links puts it on this link.
void keep_link_ops(std::vector<MemberOps>& members, int64_t offset_ns, int64_t tolerance_ns);

// Clock edges of a communicator from its members' matched end times (before any correction).
std::vector<ClockEdge> comm_clock_edges(const std::vector<MemberOps>& members);

// Full replay with the clock solution; adds per-rank sums into acc. `min_hang_margin_ns`: the
// least hang margin (see Desync; the run's --hang-margin).
CommReplay replay_communicator(const std::vector<MemberOps>& members, const ClockSolution& clocks,
                               RankAccumulator& acc, int64_t min_hang_margin_ns = kMinHangMarginNs);

}  // namespace collectives
