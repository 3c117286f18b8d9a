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
};

// Per-rank sums over the ops of one or more communicators (indexed by global rank).
struct RankAccumulator {
  std::vector<double> ops, late, wait_ns, blame_ns, hold_ns, transfer_ns;
  // [rank][iteration index]: blame of ops where it was last; its own waits
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
  double busbw_gbps = 0;          // 0 when the message size is unknown
};

struct Desync {
  uint32_t seq = 0;                  // first op some members never reached
  CollectiveType type = CollectiveType::Unknown;
  std::vector<int32_t> missing_ranks;
  std::vector<int32_t> blocked_ranks;  // members that launched it and never finished
};

struct CommReplay {
  std::vector<OpRow> ops;                     // matched ops
  std::vector<std::vector<int64_t>> arrival;  // [op][member], corrected ns
  std::vector<ClockEdge> edges;               // member i vs member 0 (uncorrected ends)
  int64_t mismatch_seq = -1;                  // first op whose members disagree on the type
  std::string mismatch;                       // what disagreed
  std::vector<Desync> desync;                 // at most one: the first op not reached by all
  double median_transfer_ns = 0;
  int64_t clock_violations_before = 0, clock_violations_after = 0;
};

// Clock edges of a communicator from its members' matched end times (before any correction).
std::vector<ClockEdge> comm_clock_edges(const std::vector<MemberOps>& members);

// Full replay with the clock solution; adds per-rank sums into acc.
CommReplay replay_communicator(const std::vector<MemberOps>& members, const ClockSolution& clocks,
                               RankAccumulator& acc);

}  // namespace collectives
