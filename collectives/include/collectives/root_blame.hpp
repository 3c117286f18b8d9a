// Root blame: who started the waiting. A rank that waited on a straggler arrives late at its next
// collective and passes the delay on, so direct blame (the peers' waits at ops where a rank came
// last, replay.hpp) also lands on the straggler's victims. As Scalasca separates short-term from
// long-term delay costs, each op's blame is split. Every rank carries the delay it received: the
// waits it spent in collectives and has not yet passed on, by the rank each chain started from.
// Ops are taken in order of their last arrival. At an op:
//   lateness = last arrival - second-to-last arrival (the time the last arriver alone held it);
//   taken    = min(what the last arriver carries, lateness): the delay it passes on;
//   p        = taken / lateness (0 when lateness is 0);
//   the op's blame x (1 - p) stays with the last arriver (its own delay), x p goes to the roots of
//   what it carried (pro rata), which shrinks by `taken`; every other member then carries its wait
//   at this op from the same roots in the same shares. A TP partner of a slow GPU waits a little at each of their all-reduces; the sum is
//   how late it then reaches its pipeline or data-parallel peers.
// Per rank: direct = blame at ops where it came last (the /ranks blame_ms); propagated = the part
// of its direct blame it passed on; root = direct - propagated + what chains starting at it
// carried elsewhere. Root blame sums to the direct total (a rank keeps its four largest roots; a
// fifth one's share goes to the others). docs/analyses.md has a worked example.
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/replay.hpp"

namespace collectives {

struct MemberArrival {  // one member of one matched op (corrected ns)
  int32_t rank = -1;
  uint32_t op = 0;  // index into BlameRecords::ops
  int64_t arrival = 0, wait = 0;
};
struct OpBlame {
  int32_t last = -1;
  int64_t last_arrival = 0, lateness = 0;
  double blame = 0;
};
struct BlameRecords {
  std::vector<OpBlame> ops;
  std::vector<MemberArrival> members;
};

// Appends a replayed communicator's ops; `ranks`: its members' ranks in member order.
void add_blame_records(const CommReplay& replay, const std::vector<int32_t>& ranks, BlameRecords& out);

struct RootBlame {
  std::vector<double> direct_ns, propagated_ns, root_ns;  // per rank
};
RootBlame root_blame(const BlameRecords& records, int world);

}  // namespace collectives
