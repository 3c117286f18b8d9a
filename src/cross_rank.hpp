// The cross-rank analysis over the transport, in the manner of Scalasca's parallel replay: each
// process contributes the collective records of the ranks it read; every communicator is replayed
// by one owning process; only compact records cross process boundaries (stream summaries, per-op
// records to the owner, clock edges, per-rank sums, per-rank evidence). Memory: a process holds
// the encoded records of the ranks it read until they are shipped (in rounds of bounded size),
// then those of the communicators it owns; the per-op replay results are never all held: the
// HDF5 writer replays each owned communicator again as it writes (replay_owned).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/clock.hpp"
#include "collectives/collective_op.hpp"
#include "collectives/communicators.hpp"
#include "collectives/desync.hpp"
#include "collectives/replay.hpp"
#include "collectives/root_blame.hpp"
#include "collectives/verdict.hpp"
#include "op_records.hpp"
#include "ranks/findings.hpp"
#include "ranks/iteration_work.hpp"
#include "topology/layout.hpp"
#include "transport.hpp"

namespace straggler {
namespace analyses {
struct PostMortem;
}

// What the process that read a rank keeps of it for the cross-rank analysis.
struct CrossRankInput {
  int rank = -1;
  std::string host;
  std::vector<StreamRecords> streams;                  // its collective ops, encoded per stream
  std::vector<collectives::StreamSummary> summaries;  // per stream, for communicator inference
  std::vector<collectives::PendingOp> pending;
  int64_t capture_end = 0;  // wall clock
  // Some NCCL launch never completed and is at least kMinHangMarginNs old at the capture end, even
  // where `pending` cannot place it on a communicator (e.g. a stream with no completed op).
  bool stuck = false;
  int64_t clock_domain = -1;  // ranks read from one file share one clock exactly (file index)
  ranks::IterationWork work;
  std::vector<int64_t> iteration_number;
  std::vector<double> step_ms;
  std::vector<ranks::RankFinding> findings;  // its root-cause findings (ranks/findings.hpp)
};

// `min_hang_margin_ns`: how old a launch that never completed must be to count as stuck (--hang-margin).
// `ops`: the rank's NCCL ops (collectives::extract_ops, extracted once where the profile is read).
CrossRankInput make_cross_input(const ranks::RankTimeline& tl, const std::vector<collectives::CollectiveOp>& ops,
                                const std::vector<ranks::Iteration>& its,
                                int64_t min_hang_margin_ns = collectives::kMinHangMarginNs);
void set_cross_rank(CrossRankInput& in, int rank);

// One communicator as every process knows it.
struct CommSummary {
  std::string name;
  collectives::CommunicatorId id;  // the name, structured
  collectives::CollectiveType type = collectives::CollectiveType::Unknown;
  std::vector<int32_t> ranks;
  std::vector<uint32_t> member_ops;  // ops each member completed
  int64_t matched_ops = 0;
  double median_transfer_ns = 0;
  std::vector<double> transfer_by_iteration;  // median per iteration index (NaN: no op); not written
  int64_t mismatch_seq = -1;
  std::string mismatch;
  uint64_t family = 0;  // communicators.hpp: same value = same collective sequence and member count
  int32_t owner = 0;  // process that replayed it
  bool p2p = false;   // a pipeline/p2p link
  bool shared = false;  // p2p: a member's stream serves another link too; ops matched by end time
  int64_t link_offset_ns = 0, link_tolerance_ns = 0;
  bool by_layout_rule = false;  // parted from a lock-stepped group by the layout rule
};

using collectives::DesyncRow;

struct ClockSummary {
  double max_offset_ns = 0, residual_ns = 0;  // residual: median spread of the pairwise fits
  int64_t violations_before = 0, violations_after = 0, ops = 0;
  int32_t unaligned_ranks = 0;
  int64_t distrusted_edges = 0;  // pairwise fits left out: too wide, or an implausible offset on thin evidence
  std::string rejected;          // why the fitted correction was not applied ("" when it was)
  // Hosts whose clocks were beyond NTP's milliseconds of the others, aligned by the ends of their
  // collectives before the communicators were inferred (collectives/host_clocks.hpp): one sentence,
  // "" when none.
  std::string far_clocks;
};

// The member records of the communicators a process owns (an implementation detail of the replay).
struct OwnedComms;

struct CrossRankResults {
  std::vector<CommSummary> comms;                 // every process
  collectives::LayoutFinding layout;              // given (--layout) or inferred, with notes
  std::shared_ptr<const OwnedComms> owned;        // this process's communicators (see replay_owned)
  collectives::ClockSolution clocks;
  ClockSummary clock;
  collectives::RankAccumulator acc;               // global sums by rank
  collectives::RootBlame root_blame;              // direct / propagated / root blame by rank
  // Every matched op with its members' arrivals (root_blame.hpp), on process 0 only (null elsewhere):
  // what the what-if replay (collectives/what_if.hpp) runs on.
  std::shared_ptr<const collectives::BlameRecords> op_records;
  collectives::Verdict verdict;                   // every process, per rank in `evidence_ranks` order
  std::vector<int32_t> evidence_ranks;            // ranks in verdict.score / verdict.cause order
  std::vector<DesyncRow> desync;
  // Communicators whose members lack ops only because their captures ended before they could have
  // reached them (missing_ranks: those members; root_cause unused): no desync, matched up to there.
  std::vector<DesyncRow> capture_ended;
  std::vector<std::vector<double>> step_ms;       // [rank index in evidence_ranks][iteration index]
  std::vector<std::vector<int64_t>> iteration_number;
  // Same shape: GPU idle and exposed communication per iteration (ranks/iteration_work.hpp; comm_ms
  // empty when unknown), for the step-time waterfall.
  std::vector<std::vector<double>> idle_ms, comm_ms, compute_ms;
  // What fixing each cause buys and where the step goes (src/analyses/what_if.hpp), every process;
  // the verdict's costs come from it.
  std::shared_ptr<const analyses::PostMortem> post_mortem;
  // Root-cause findings of every rank (comm_imbalance included), by rank then finding.
  std::vector<ranks::RankFinding> findings;
  int64_t min_hang_margin_ns = collectives::kMinHangMarginNs;  // the run's --hang-margin (replay_owned too)
  // Ranks whose collectives never end with any other rank's (each of their pairwise clock fits
  // spreads wider than members of one collective can): not of this job (a profile of another job
  // put among these), with the reason; empty when every rank belongs. The driver then analyses the
  // run again without them.
  std::map<int32_t, std::string> foreign_ranks;
  int64_t bytes_exchanged = 0;                    // sent by this process
  int64_t bytes_exchanged_total = 0;              // sent by all processes together
};

// Collective. Ships (and frees) the records of `local` as it goes.
CrossRankResults run_cross_rank(Transport& t, std::vector<CrossRankInput>& local, int world,
                                const std::optional<topology::ParallelLayout>& layout_given, bool clock_correction = true,
                                int64_t min_hang_margin_ns = collectives::kMinHangMarginNs);

// Replays each communicator this process owns again, with the final clocks, in index order, and
// hands its per-op results to `fn` (index in comms, replay). The same results as the analysis saw.
void replay_owned(const CrossRankResults& x, const std::function<void(size_t, const collectives::CommReplay&)>& fn);

}  // namespace straggler
