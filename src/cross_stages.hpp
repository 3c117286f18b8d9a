// The stages of the cross-rank run (run_cross_rank composes them in this order), each with typed
// inputs and outputs. Every stage is collective: all processes call it in the same order.
//   1. infer_stage:    stream summaries of every rank -> the same communicators everywhere
//   2. ship_records:   each member's op records -> the process that owns its communicator
//   3. align_clocks:   clock edges of the owned communicators -> one clock solution everywhere
//   4. replay_stage:   owned communicators replayed -> per-rank sums, per-communicator figures
//   5. collect_desync: desyncs of every communicator -> root causes (collectives/desync.hpp)
//   6. merge_sums:     per-rank sums over all processes
//   7. judge:          per-rank evidence to every process -> the straggler verdict
// Only compact records cross process boundaries (exchange.hpp field lists), through Exchange.
#pragma once
#include <map>
#include <optional>
#include <vector>

#include "collectives/root_blame.hpp"
#include "cross_rank.hpp"
#include "exchange.hpp"
#include "transport.hpp"

namespace straggler {

template <>
struct Wire<collectives::BlameRecords> {
  static void fields(auto& ar, auto& b) { ar(b.ops, b.members); }
};

// The transport, counting the bytes this process sends.
class Exchange {
 public:
  explicit Exchange(Transport& t) : t_(t) {}
  Transport& transport() { return t_; }
  int size() const { return t_.size(); }
  std::vector<std::string> allgather(const std::string& mine) {
    sent_ += int64_t(mine.size()) * (t_.size() - 1);
    return t_.allgather(mine);
  }
  std::vector<std::string> alltoall(const std::vector<std::string>& to_each) {
    for (size_t p = 0; p < to_each.size(); ++p)
      if (int(p) != t_.rank()) sent_ += int64_t(to_each[p].size());
    return t_.alltoall(to_each);
  }
  int64_t sent() const { return sent_; }

 private:
  Transport& t_;
  int64_t sent_ = 0;
};

struct OwnedMember {
  int64_t capture_end = 0;
  bool pending_next = false;
  int64_t pending_launch = 0;
  uint32_t ops = 0;
  std::string bytes;  // encode_streams' encoding of its ops on the communicator's stream
};
struct OwnedComms {
  std::map<uint32_t, std::vector<OwnedMember>> members;  // by communicator index, in member order
};

// 1.
struct Inferred {
  std::vector<collectives::StreamSummary> streams;  // every rank's
  collectives::CommunicatorInference inference;
  std::vector<CommSummary> comms;                   // with the process that owns each
  // Clock domains (hosts) far off the reference's clock, by rank: their coarse offset (ns; 0 for
  // the rest) and what the report says of them (collectives/host_clocks.hpp).
  std::vector<int64_t> coarse_offset_ns;
  std::string far_clocks;
};
Inferred infer_stage(Exchange& x, const std::vector<CrossRankInput>& local,
                     const std::optional<topology::ParallelLayout>& given);

// 2. Frees the encodings of `local` as they are shipped.
std::shared_ptr<OwnedComms> ship_records(Exchange& x, std::vector<CrossRankInput>& local, const Inferred& inf);

// A communicator's member ops as the replay takes them.
std::vector<collectives::MemberOps> decode(const CommSummary& cs, const std::vector<OwnedMember>& owned);

// 3.
struct ClockFit {
  std::vector<collectives::ClockEdge> edges;  // every process's, sorted by (a, b)
  size_t distrusted = 0;                      // edges left out by trusted_edges
  int reference = 0;  // lowest rank present: offsets are relative to it
  collectives::ClockSolution solution;
};
ClockFit align_clocks(Exchange& x, const OwnedComms& owned, const Inferred& inf, const std::vector<CrossRankInput>& local,
                      int world, bool correction);

// 4. Per-communicator figures, summed over processes (each communicator has one owner).
struct CommStats {
  double matched_ops = 0, median_transfer_ns = 0, mismatch_seq_plus_1 = 0, violations_before = 0, violations_after = 0;
};
struct CommText {
  uint32_t comm = 0;
  std::string text;
};
// What the owners found, for every process: mismatch texts and desync rows travel as strings.
// A communicator's median transfer in one iteration (late slow links: collectives/slow_links.hpp).
struct IterTransfer {
  uint32_t comm = 0;
  int32_t iteration = 0;
  double median_ns = 0;
};
struct ReplayNotes {
  std::vector<CommText> mismatch;
  std::vector<DesyncRow> desync, capture_ended;
  std::vector<IterTransfer> transfers;
};
struct Replayed {
  collectives::RankAccumulator acc;  // this process's communicators only
  collectives::BlameRecords blame;   // this process's communicators' ops (root_blame.hpp)
  std::vector<CommStats> stats;      // every communicator
  ReplayNotes notes;                 // this process's communicators
};
Replayed replay_stage(Exchange& x, const OwnedComms& owned, const std::vector<CommSummary>& comms,
                      const collectives::ClockSolution& clocks, int world, int64_t min_hang_margin_ns);

// 5. Sets res.desync, res.capture_ended (root causes, pipeline group numbers) and mismatch texts.
void collect_desync(Exchange& x, const Replayed& rp, const Inferred& inf, const std::vector<CrossRankInput>& local,
                    int world, CrossRankResults& res);

// 5b. Root blame's share of the post-mortem's work on process 0, in window units (what_if.hpp);
// the same on every process. Root blame itself runs in the post-mortem, on every op record.
double root_blame_cost(Transport& t, const collectives::BlameRecords& mine);
// Process 0's root blame (empty elsewhere) on every process.
collectives::RootBlame share_root_blame(Exchange& x, collectives::RootBlame rb, int world);

// 6.
void merge_sums(Transport& t, collectives::RankAccumulator& acc, const std::vector<CrossRankInput>& local);

// 7. Sets res.verdict (stragglers tied to their findings), evidence_ranks, step_ms, iteration_number, findings.
void judge(Exchange& x, const std::vector<CrossRankInput>& local, const Inferred& inf, CrossRankResults& res);

}  // namespace straggler
