// Root blame: who started the waiting. A rank that waited on a straggler arrives late at its next
// collective and passes the delay on, so direct blame (the peers' waits at ops where a rank came
// last, replay.hpp) also lands on the straggler's victims. As Scalasca separates short-term from
// long-term delay costs (Boehme et al.), each op's blame is split by a what-if: which waits would go
// if a root's own delays went. Every rank carries a shift per root: how much later it runs than it
// would without that root's delays. Members of one collective leave it together (the physical
// invariant this rests on: NCCL completes a collective on every member only when all arrived), so
// they all leave with the same shifts. Ops are taken in order of their last arrival. At an op:
//   own       = the last arriver's lead over the others once every other root's shift is taken out
//               of everyone's arrival, at most its lateness (last - second-to-last arrival);
//   for each root k (the last arriver, and every root a member is shifted by): every member
//               arrives its k-shift earlier (the last arriver, when it is k, also `own` earlier),
//               all leave at the latest of those; saved_k = the waits that go (a wait that would
//               grow counts 0); the shift k leaves every member with = last arrival - that time;
//   blame goes to the roots by saved_k (scaled down to the op's blame where savings overlap), the
//   rest stays with the last arriver.
// Ranks shifted alike by one root (all of them, after a data-parallel all-reduce behind a slow rank)
// wait on each other as in a healthy run: no saving, so pipeline-schedule waits are not charged to
// the root. Per rank: direct = blame at ops where it came last (the /ranks blame_ms); propagated =
// its direct blame x (1 - own / lateness): the part it passed on; root = the blame charged to it as
// a root. Root blame sums to the direct total. A rank keeps its eight largest shifts; a dropped
// one counts as slack for that root (under-, never over-charged). docs/analyses.md has a worked
// example.
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/replay.hpp"

namespace collectives {

struct MemberArrival {  // one member of one matched op (corrected ns)
  int32_t rank = -1;
  uint32_t op = 0;  // index into BlameRecords::ops
  int64_t arrival = 0, wait = 0;
  int64_t launch = 0;  // its launching API call on the rank's own clock (uncorrected; start when unknown)
};
struct OpBlame {
  int32_t last = -1;
  int64_t last_arrival = 0, lateness = 0;
  double blame = 0;
  // For the what-if replay (what_if.hpp): its communicator (index in the run's list), position in
  // the communicator's matched ops, transfer (end - last arrival) and iteration index on the last arriver.
  uint32_t comm = 0, seq = 0;
  int64_t transfer = 0;
  int32_t iteration = -1;
};
struct BlameRecords {
  std::vector<OpBlame> ops;
  std::vector<MemberArrival> members;
};

// Appends a replayed communicator's ops; `members`: what it was replayed from; `comm`: its index.
void add_blame_records(const CommReplay& replay, const std::vector<MemberOps>& members, BlameRecords& out,
                       uint32_t comm = 0);

struct RootBlame {
  std::vector<double> direct_ns, propagated_ns, root_ns;  // per rank
};
RootBlame root_blame(const BlameRecords& records, int world);

}  // namespace collectives
