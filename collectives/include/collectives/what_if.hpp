// What-if replay: the run's steady steps replayed over their dependency structure with one change,
// in the manner of Scalasca's and Dimemas' trace replay, on the per-op records the cross-rank
// analysis already gathers for root blame (root_blame.hpp; never raw events).
//
// The structure, taken from the run itself (docs/what-if.md has a worked example):
//   * Each rank runs its ops in the order it reached them (its arrivals, any stream). Its arrival
//     at an op depends on its previous arrival and on every op of its own that ended since then
//     (the rank saw it end before it went on: a collective it waited in, the stream's previous op);
//     the time from the latest of those to the arrival is the rank's own work there (its "gap").
//   * Members of one collective leave it together, at the last arrival plus the op's transfer
//     (end - last arrival). This is the physical invariant the replay rests on: NCCL completes a
//     collective (and a send/recv pair) on every member only once all members have arrived, and
//     the members finish together (replay.hpp). The same holds for p2p links.
// Replayed unchanged, every arrival and end comes out exactly as measured (corrected clocks). A
// change alters gaps or transfers and the replay moves everything that depends on them, so
// fixing a straggler also removes its peers' waits and whatever those waits delayed downstream.
// The step's cost is the window's makespan (first arrival to last end): the changed step time is
// the measured one scaled by the ratio of makespans.
//
// Changes (WhatIfChange; they combine):
//   ranks            each listed rank's gaps become the median gap of its role peers (same pipeline
//                    stage; not themselves listed) at the same point: the same communicator family,
//                    op position and, on a p2p link, the same end of the link. Ranks listed in
//                    `links` also get the median transfer of their communicators' like (the same
//                    family and position on other communicators): a slow link fixed; so do the
//                    ops of the communicators listed in `comms` (the verdict's slow links).
//   hide_communication every transfer 0 (the collectives fully overlapped; waits for late peers stay).
//   balance_stages   every gap of a rank scaled by (mean stage work) / (its stage's work), where a
//                    stage's work is the median over its ranks of their compute time (`work`), else of
//                    their summed gaps.
// Not modelled: the host running ahead of the GPU (a gap shortened on the GPU does not make the
// host launch earlier than it did; what the replay shortens is the GPU work and the waiting),
// work after a rank's last op in the window.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/root_blame.hpp"
#include "common/csr.hpp"

namespace collectives {

// The op records by iteration and their members by op, built once per run: every window's replay
// (each phase, each iteration) takes its ops from here instead of scanning all records, which made
// the post-mortem quadratic in the iterations.
class RecordIndex {
 public:
  explicit RecordIndex(const BlameRecords& records);
  // Ops whose iteration index is in [first, end), in record order.
  std::vector<uint32_t> ops_in(int32_t first, int32_t end) const;
  // Indices into records.members of one op's members, in record order.
  std::span<const uint32_t> members_of(uint32_t op) const { return members_.of(op); }

 private:
  int32_t lowest_ = 0;         // the iteration of group 0 of by_iteration_
  common::Csr by_iteration_;   // iteration - lowest_ -> ops
  common::Csr members_;        // op -> members
};

struct WhatIfInputs {
  const BlameRecords* records = nullptr;
  const RecordIndex* index = nullptr;  // of `records`; built by the replay when absent
  std::vector<uint64_t> comm_family;  // by communicator index (OpBlame::comm)
  std::vector<uint8_t> comm_p2p;      // 1: a p2p link (members are its two ends)
  // 1: a data-parallel group's communicator (the layout names it): its gradient reductions may run
  // beside the backward (asynchronous); others are judged by how they overlap (what_if.cpp).
  std::vector<uint8_t> comm_data_parallel;
  std::vector<uint8_t> comm_shared;   // 1: a p2p link whose members' streams serve other links too
  std::vector<int32_t> role;          // by rank: pipeline stage (0 without a layout)
  std::vector<double> work;           // by rank: compute time over the window (empty, or <= 0: unknown)
  // Replayed: ops whose iteration index (on the last arriver) is in [first, end), and those of the
  // iteration before as a lead-in: the makespan counts from the first arrival in the window, so the
  // window's first ops are replayed too (a straggler's first stall in the window is fixed as well).
  int32_t first_iteration = 0, end_iteration = std::numeric_limits<int32_t>::max();
};

// One change; its parts combine (every straggler fixed and communication hidden: both set).
struct WhatIfChange {
  std::vector<int32_t> ranks;   // at their peers' median
  // Beside `ranks` (may be shorter): a factor (0, 1] for a rank's own gaps where no peer of its
  // role is left unfixed (its own slowdown's inverse: a host that is a whole stage); 1 or absent: none.
  std::vector<double> own_scale;
  std::vector<int32_t> links;   // of `ranks`, those whose communicators' transfers are fixed too
  std::vector<uint32_t> comms;  // communicators whose transfers go to their like's median (a slow link)
  // Beside `comms` (may be shorter): where no like is left unfixed, a factor (0, 1] for the
  // communicator's own transfers from an iteration index on (a like that slowed as one).
  std::vector<double> comm_scale;
  std::vector<int32_t> comm_scale_from;
  bool hide_communication = false;
  bool balance_stages = false;
};

class WhatIfReplay {
 public:
  explicit WhatIfReplay(const WhatIfInputs& in);
  ~WhatIfReplay();
  WhatIfReplay(const WhatIfReplay&) = delete;
  WhatIfReplay& operator=(const WhatIfReplay&) = delete;
  size_t ops() const;                 // in the window
  int stages() const;                 // distinct roles among the replayed ranks
  double makespan_ns() const;         // as measured
  double replay_unchanged_ns() const;  // the replay without a change (equals makespan_ns(): a self-check)
  double replay(const WhatIfChange& change) const;  // makespan with the change

 private:
  struct Model;
  std::unique_ptr<Model> m_;
};

}  // namespace collectives
