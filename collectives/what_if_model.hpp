// The what-if replay's model (what_if.cpp builds and runs it, what_if_link.cpp links each rank's
// arrivals to what held them up): its nodes, its steps, and the Model itself. Internal to the
// collectives library.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "collectives/what_if.hpp"
#include "peer_order.hpp"
#include "what_if_tables.hpp"

namespace collectives {

namespace what_if_detail {

constexpr uint32_t kNone = 0xffffffffu;  // no entry, no op; as a stream: p2p links sharing streams

struct OpNode {
  double last = 0, transfer = 0;  // last arrival; end - last arrival (never negative here)
  uint64_t family = 0;            // its communicator's
  uint32_t comm = 0, seq = 0;
  uint32_t first = 0, count = 0;  // its members: entries [first, first + count) (added op by op)
  uint32_t like = 0;              // its like (family, seq): a group of likes
  bool window = true;             // in the window (else the lead-in)
  bool p2p = false;               // on a p2p link
  int32_t iteration = 0;          // on its last arriver
  double end() const { return last + transfer; }
};

struct Entry {  // one member's arrival at one op
  double arrival = 0, gap = 0, lead = 0;
  int64_t launch = 0;  // on the rank's own clock: only compared with its other launches
  int32_t rank = -1;
  uint32_t op = 0;
  uint32_t prev = kNone;      // the rank's previous entry on the same communicator
  uint32_t ready_op = kNone;  // asynchronous: the op whose end (+ lead) its data waited for (set_launch_dependency)
  uint32_t dep_first = 0, dep_count = 0;  // ops whose end it waited for: deps[first, first + count)
  uint32_t peers = 0;         // its role peers at the same point: a group of peer_gaps
  uint32_t link = 0;          // on a p2p link: which of the rank's links of the family, in order of first use
  bool fixed = false;         // nothing before it in the window: stays where it was
  bool window = true;         // its op's
};

// A node of the replay in topological order with all that a run reads of it: a run goes through
// the steps in order instead of about the entries and ops (cache misses were most of its time).
struct Step {
  double value = 0;        // an entry's gap (its arrival when fixed); an op's transfer
  uint32_t node = 0;       // the entry, or entries + the op
  uint32_t preds_end = 0;  // the steps it follows: preds[the previous step's preds_end, preds_end)
  uint32_t who = 0;        // an entry's rank; an op's communicator
  uint8_t kind = 0;
};
constexpr uint8_t kOpStep = 1, kFixedStep = 2, kWindowStep = 4, kReadyStep = 8;  // kReadyStep: the next of readies

}  // namespace what_if_detail

using namespace what_if_detail;

struct WhatIfReplay::Model {
  std::vector<OpNode> ops;
  std::vector<Entry> entries;                        // op by op, an op's members in record order
  std::vector<uint32_t> deps;                        // ops whose end an entry waited for (until compiled)
  std::vector<uint32_t> order;                       // topological: < entries.size() an entry, else an op (until compiled)
  std::vector<Step> steps;                           // `order` compiled
  std::vector<uint32_t> preds;                       // by step: an entry's prev and deps, an op's members
  std::vector<std::pair<uint32_t, double>> readies;  // by kReadyStep step: its ready op's step, its lead
  std::vector<int32_t> role;                         // by rank
  std::vector<uint8_t> data_parallel;                // by communicator
  std::vector<uint8_t> shared;                       // by communicator: a p2p link on streams shared with other links
  size_t ranks = 0, comms = 0;                       // above the highest rank and communicator replayed
  bool repeats = false;                              // a rank twice in one op (an entry's deps may repeat)
  uint32_t stream_of(uint32_t comm) const { return comm < shared.size() && shared[comm] ? kNone : comm; }
  // Flat, not a container per key: a replay's build is one of many (each phase, each iteration),
  // and small allocations dominated it. Group g: [first[g], first[g + 1]), unordered within.
  std::vector<uint32_t> peer_first, like_first;
  size_t peer_groups = 0;  // distinct peer keys (Entry::peers, set before linking)
  std::vector<Sample> peer_gaps;   // the entries not fixed, grouped by peer key
  std::vector<Sample> peer_leads;  // beside peer_gaps: their leads (of kNone: no ready op)
  std::vector<Sample> likes;      // every op replayed, grouped by like
  std::map<int32_t, double> stage_work;
  std::vector<double> stage_scale;  // by rank: (mean stage work) / (its stage's work), or 1
  double start = 0, makespan = 0;

  int32_t role_of(int32_t r) const { return r >= 0 && size_t(r) < role.size() ? role[size_t(r)] : 0; }
  Key peer_key(size_t e) const {
    const OpNode& op = ops[entries[e].op];
    return {op.family ^ (uint64_t(uint32_t(role_of(entries[e].rank))) * 0xff51afd7ed558ccdull), op.seq,
            op.p2p ? uint32_t(e - op.first) | entries[e].link << 16 : 0u};
  }
  void order_links();
  void build(const WhatIfInputs& in);
  void add_ops(const WhatIfInputs& in);
  // One rank's entries and streams (classify), in buffers reused from rank to rank; what is by
  // communicator is valid where `mark` is the rank's.
  struct RankStreams {
    struct Pos {  // one of the rank's entries: what linking reads of it, side by side
      double arrival, end;  // the entry's; its op's
      int64_t launch;
      uint32_t e, op, comm, slot;
    };
    std::vector<Pos> list;                        // by arrival (k: a position in it)
    std::vector<uint32_t> stream;                 // by slot: a communicator, or kNone
    std::vector<uint8_t> slot_async, overlapped;  // by slot: an asynchronous communicator's; by k
    std::vector<uint32_t> chain_first, chain;     // by slot: its positions, by arrival
    std::vector<double> chain_arrival;            // beside chain
    std::vector<uint32_t> blocking;               // positions on blocking communicators, by launch
    std::vector<uint32_t> mark, slot_of;          // by stream index (a communicator; comms: kNone)
    std::vector<uint32_t> overlaps, count;        // by communicator: its ops that overlapped, all its ops
    std::vector<uint8_t> async;                   // by communicator
    std::vector<std::pair<uint32_t, uint32_t>> dep_pairs;  // (k, op whose end it waited for)
    std::vector<uint32_t> fill, pair_first, pair_ops, hint;
    std::vector<uint8_t> step_end;  // by k: a data-parallel op that ends its step's burst
    std::vector<uint32_t> holders;  // k of p2p ops and step ends, by their op's end (set_launch_dependency)
    std::vector<double> pause, widest;  // find_step_ends' buffers
    std::vector<int32_t> labels;
  };
  void find_step_ends(RankStreams& rs) const;
  void link_entries();
  void classify(RankStreams& rs, uint32_t mark) const;
  void link_rank(RankStreams& rs, const PeerOrder* peers);
  void set_launch_dependency(const RankStreams::Pos& at, const RankStreams& rs);
  void sort_topologically();
  void compile();
  void build_tables(const WhatIfInputs& in);
  struct Run {  // one run's change, its ranks and communicators flagged (not searched per member)
    const WhatIfChange* change = nullptr;
    std::vector<uint8_t> fixed, link, comm;
    std::vector<double> scale;  // by rank: a fixed rank's own gap where no healthy peer is left
    std::vector<double> comm_scale;      // by communicator: its own transfer where no healthy like is left
    std::vector<int32_t> comm_scale_from;  // ... for its ops from this iteration index on
    bool any_fixed = false, any_link = false;
    mutable std::vector<double> buf;  // for the medians
  };
  double run(const WhatIfChange* change) const;
  double op_end(const Step& s, const double* t, const uint32_t* pred, const Run& run) const;
};

}  // namespace collectives
