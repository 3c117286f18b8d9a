// Infers the TP x PP x DP layout and rank order from who talks to whom (the communicators found
// in the data), for runs profiled without --layout. What it relies on is Megatron's structure,
// not any export convention: pipeline p2p links form chains of PP ranks (one per pipeline), the
// tensor-parallel groups carry the most frequent collectives, and the data-parallel groups are
// the remaining collective groups (a group with under a quarter of a link's ops is once-per-flush
// DP, never TP); every group of the layout is an exact set of ranks given by the rank order. Chains
// may be found in pieces (a grouped send/receive kernel coincides with one neighbour at a time), so
// every pipeline depth dividing the world is tried, the chains' own length first. A layout is
// reported only when it explains most observed groups.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "topology/layout.hpp"

namespace topology {

struct ObservedGroup {
  std::vector<int> ranks;  // ascending
  bool p2p = false;        // a point-to-point link (two ranks)
  double ops = 0;          // ops per member over the capture (frequency ranks TP above DP)
};

struct LayoutGuess {
  ParallelLayout layout;
  double consistency = 0;  // share of observed groups that are groups (or pipeline links) of it
  std::string how;         // one line: what it was inferred from
};

// `ranks`: the ranks present (ascending). Empty when nothing fits.
std::optional<LayoutGuess> infer_layout(const std::vector<ObservedGroup>& groups, const std::vector<int>& ranks);

// True when `ranks` (ascending) is a TP, DP or PP group of the layout, or (p2p) two adjacent
// stages of one pipeline. Sets `kind` and the group.
bool layout_explains(const ParallelLayout& l, const std::vector<int>& ranks, bool p2p, CommunicatorGroup* group = nullptr);

}  // namespace topology
