// Which CUDA streams on which ranks form one NCCL communicator, from invariants of NCCL alone.
// A profile export has no communicator id without NCCL payloads, and stream ids are per-process
// CUPTI ids (numbered in first-use order, so the same role gets different ids on different
// ranks): they are never compared across ranks. What NCCL promises instead:
//  1. every member issues the same sequence of collectives on a communicator (NCCL docs, "Group
//     calls" / "Communicator creation": ops on one communicator are ordered and must match);
//  2. a collective cannot complete on any member before every member has arrived, and then the
//     data moves in lock step, so all members end within microseconds: the difference of two
//     members' k-th end times is their clock difference (constant, or a line under drift) plus
//     microsecond noise, op after op. Streams of distinct communicators that merely run in step
//     wander by the jitter of their other members;
//  3. ranks on one host share one clock, so there the difference itself is near zero;
//  4. each point-to-point send has exactly one receiver and both ends finish together: a p2p
//     (SendRecv) link is a pair of streams whose ops coincide at one offset; one stream may serve
//     both pipeline neighbours (batched p2p on one pipeline communicator), its ops then split
//     between the two links by their end times (p2p_links.hpp).
// Where the data cannot decide (distinct groups in perfect lock step), the answer consistent with
// a parallel layout is taken (groups of different kinds share at most one rank) and a note says so.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/nccl_kernel.hpp"
#include "collectives/work_split.hpp"
#include "topology/layout.hpp"

namespace collectives {

// One (rank, stream) as seen by its reader: exchanged to every process.
struct StreamSummary {
  int32_t rank = -1, stream = 0;
  uint32_t ops = 0;
  uint64_t type_prefix_hash = 0;     // hash of the first kPrefix collective types
  uint32_t ops_per_iteration = 0;    // median over its steady iterations (0: no iterations)
  CollectiveType first_type = CollectiveType::Unknown;
  uint64_t clock_domain = 0;         // equal on ranks that share a clock (one host); 0: unknown
  std::vector<int64_t> first_ends;   // end times (wall clock) of the first kFingerprint ops
  // NCCL's communicator id (NVTX payload) when every op of the stream carries the same one, else 0:
  // streams with one id are one communicator, exactly (infer_communicators).
  uint64_t comm_id = 0;
  static constexpr size_t kPrefix = 16, kFingerprint = 64;
};

struct Member {
  int32_t rank = -1, stream = 0;
  uint32_t ops = 0;
};

// What a communicator is, beside its display name: a group of the layout (kind and index among
// groups of that kind; a p2p link also names the pipeline stages of its two members), or, where no
// layout explains it, an inferred group numbered in inference order.
struct CommunicatorId {
  std::optional<topology::GroupKind> kind;  // none: no group of the layout ("comm-<index>")
  int32_t index = -1;
  int32_t from_stage = -1, to_stage = -1;   // a pipeline link: stages of members[0] and members[1]
  bool link() const { return from_stage >= 0; }
  // Another link of the same pipeline group.
  bool same_pipeline(const CommunicatorId& o) const {
    return link() && o.link() && kind == o.kind && index == o.index;
  }
};

struct Communicator {
  std::string name;             // "tp-3", "dp-0", "pp-1:0-1" with a layout, else "comm-<n>"
  CommunicatorId id;            // the same, structured
  std::vector<Member> members;  // sorted by rank
  CollectiveType type = CollectiveType::Unknown;  // type of its first op
  uint64_t family = 0;  // same collective sequence, rate and member count: comparable communicators
  uint64_t shape = 0;   // same leading type sequence and member count (rate aside)
  // A point-to-point link: two members. When a member's stream also serves another link
  // (`shared`), the link's ops are those whose ends coincide: end(members[0]) - end(members[1])
  // ~ link_offset_ns (wall clocks) within link_tolerance_ns; otherwise they pair by position.
  bool p2p = false, shared = false;
  int64_t link_offset_ns = 0, link_tolerance_ns = 40'000;
  bool by_layout_rule = false;  // split by the layout rule, the data could not tell
};

// The family of p2p links a layout completed (complete_links, p2p_links.hpp): their ops are the
// share whose ends coincide, a sample biased toward the exchanges that ended their kernels, so
// their transfer times are not compared with other links' (slow_links.cpp).
inline constexpr uint64_t kThinLinkFamily = 0x7468696e6c696e6bull;

struct CommunicatorOptions {
  // Upper limit of the lock-step score of two members (ns); members of real rings stay within a
  // few us, real p2p pairs within ~15 us; distinct groups differ by their members' jitter.
  int64_t coherence_ns = 100'000;
  int64_t floor_ns = 20'000;        // scores below this are noise: never used to reject a pair
  int64_t same_host_ns = 1'000'000;  // one host, one clock: members' ends differ by less
  int64_t max_clock_error_ns = 50'000'000;  // NTP error bound when pairing p2p ops across hosts
  int64_t partner_factor = 3;        // a lock-step edge: within this factor of the pair's best partner score
  int64_t cluster_edge_percent = 90;  // clusters join when this share of their cross pairs are edges
  int64_t chance_link_percent = 10;  // p2p links fitting no pipeline of the layout are dropped up to this share
  // A family of more streams than this is scored through candidate pairs (candidate_pairs.hpp),
  // not every pair: the same near pairs wherever a group's members share a bucket, which they do
  // with near certainty; below it every pair is scored (cheap, and exact by construction).
  size_t exact_family_streams = 512;
  // Each stream's candidates in a crowded bucket: its nearest this many by the band's mean interval
  // (candidate_pairs.hpp). 16k ranks: 3.1M candidate pairs at 16, 11.3M at 64, the same groups.
  size_t candidate_neighbours = 16;
  // p2p links (p2p_links.hpp): the ends of one op coincide within p2p_window_ns (real pairs
  // ~10 us); a link needs p2p_min_ops coinciding ops, at least p2p_min_percent of the fewer
  // overlapping ops of its two streams, and at most p2p_max_clash_percent of them claimed by an
  // earlier link; its tolerance is spreads x its spread + base, within [min, max].
  int64_t p2p_window_ns = 24'000;
  size_t p2p_min_ops = 3;
  int64_t p2p_min_percent = 20, p2p_max_clash_percent = 20;
  int64_t link_tolerance_spreads = 4, link_tolerance_base_ns = 5'000;
  int64_t link_tolerance_min_ns = 10'000, link_tolerance_max_ns = 40'000;
};

// The inferred or given layout and how it was found.
struct LayoutFinding {
  std::optional<topology::ParallelLayout> layout;
  std::string source;                // "given", "inferred", or "" (none)
  double consistency = 0;            // share of communicators that are groups of the layout
  std::string how;                   // inferred: from what ("inferred from 24 collective groups and ...")
  std::vector<std::string> notes;    // what the data could not decide; disagreements with --layout
};

struct CommunicatorInference {
  std::vector<Communicator> comms;
  LayoutFinding layout;
};

// Deterministic: every process computes the same result from the same summaries.
// `hosts[r]` is the host index of rank r (-1: unknown), for the layout inference.
// `split`: the pair scoring of large families and of p2p links spread over the processes (every
// process calls it with the same streams and gets the same answer).
CommunicatorInference infer_communicators(std::vector<StreamSummary> streams,
                                          const std::optional<topology::ParallelLayout>& given,
                                          const CommunicatorOptions& opt = {}, const WorkSplit& split = {});

// Lock-step score of two fingerprints (exposed for tests): how far the difference of their k-th
// end times strays from a straight line, in ns (0 when too short to tell).
int64_t lockstep_score(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
bool coherent(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t limit_ns);

// p2p: pairs ops of two streams whose ends coincide at offset ~`offset_ns` (a - b), following
// slow clock drift; returns index pairs (into a, into b), increasing. Used on the full op lists.
std::vector<std::pair<uint32_t, uint32_t>> match_link_ops(const std::vector<int64_t>& end_a,
                                                          const std::vector<int64_t>& end_b, int64_t offset_ns,
                                                          int64_t tolerance_ns = 60'000);

}  // namespace collectives
