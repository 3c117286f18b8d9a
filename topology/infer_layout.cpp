#include "topology/infer_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "common/groups.hpp"

namespace topology {

bool layout_explains(const ParallelLayout& l, const std::vector<int>& ranks, bool p2p, CommunicatorGroup* group) {
  if (ranks.empty() || ranks.back() >= l.world() || ranks.front() < 0) return false;
  if (p2p) {
    if (ranks.size() != 2) return false;
    const int a = ranks[0], b = ranks[1];
    // Adjacent stages, or the first and the last (interleaved 1F1B's wrap-around link).
    const int d = std::abs(l.pp_rank(a) - l.pp_rank(b));
    const bool ok = l.tp_rank(a) == l.tp_rank(b) && l.dp_rank(a) == l.dp_rank(b) && (d == 1 || (l.pp > 2 && d == l.pp - 1));
    if (ok && group) *group = group_of(l, GroupKind::PP, a);
    return ok;
  }
  for (auto kind : {GroupKind::TP, GroupKind::DP, GroupKind::PP}) {
    auto g = group_of(l, kind, ranks.front());
    if (g.ranks.size() >= 2 && g.ranks == ranks) {
      if (group) *group = std::move(g);
      return true;
    }
  }
  return false;
}

namespace {

// Sizes of the connected components of the p2p link graph (pipelines), when all are equal.
int pipeline_length(const std::vector<ObservedGroup>& groups, const std::vector<int>& ranks) {
  common::Groups<int> pipes;
  for (int r : ranks) pipes.add(r);
  bool any = false;
  std::map<int, std::set<int>> peers;
  for (const auto& g : groups)
    if (g.p2p && g.ranks.size() == 2 && pipes.has(g.ranks[0]) && pipes.has(g.ranks[1])) {
      pipes.join(g.ranks[0], g.ranks[1]), any = true;
      peers[g.ranks[0]].insert(g.ranks[1]), peers[g.ranks[1]].insert(g.ranks[0]);
    }
  if (!any) return 1;
  // A pipeline is a chain: at most two neighbours per rank. More is all-to-all done with p2p.
  for (const auto& [r, p] : peers)
    if (p.size() > 2) return 1;
  // The most common chain length: one spurious link (a chance coincidence) joining two pipelines
  // must not double the pipeline depth.
  std::map<int, int> size, lengths;
  for (int r : ranks) size[pipes.find(r)]++;
  for (auto [root, n] : size) lengths[n]++;
  int len = 1, most = 0;
  for (auto [n, count] : lengths)
    if (n > 1 && count >= most) len = n, most = count;
  return len;
}

// Pipeline depths to try: the chains' length first, then every depth that divides the world. Links
// are found from coinciding ends, and a grouped send/receive kernel ends with only one of its two
// exchanges, so a pipeline's chain may be found in pieces (interleaved 1F1B's wrap link and the
// links between hosts, not the others): the pieces must fit the depth, not make it.
std::vector<int> depths_to_try(const std::vector<ObservedGroup>& groups, const std::vector<int>& ranks, int world) {
  std::vector<int> out = {pipeline_length(groups, ranks)};
  if (std::any_of(groups.begin(), groups.end(), [](auto& g) { return g.p2p; }))
    for (int pp = 2; pp <= world; ++pp)
      if (world % pp == 0 && pp != out.front()) out.push_back(pp);
  return out;
}

// Tensor-parallel collectives run in every microbatch's forward and backward (Megatron's row and
// column parallel layers), so a TP group carries at least as many ops as a pipeline link does
// exchanges in one direction; a group with fewer is data-parallel (once per flush).
bool too_rare_for_tp(const std::vector<ObservedGroup>& groups, double tp_ops) {
  double link_ops = 0;
  for (const auto& g : groups)
    if (g.p2p) link_ops = std::max(link_ops, g.ops);
  return link_ops > 0 && tp_ops * 4 < link_ops;
}

}  // namespace

std::optional<LayoutGuess> infer_layout(const std::vector<ObservedGroup>& groups, const std::vector<int>& ranks) {
  if (ranks.empty() || groups.empty()) return std::nullopt;
  const int world = ranks.back() + 1;
  // One pair talking p2p and nothing else is as much an all-to-all as a pipeline: no layout.
  if (world == 2 && pipeline_length(groups, ranks) == 2 && std::none_of(groups.begin(), groups.end(), [](auto& g) { return !g.p2p; }))
    return std::nullopt;
  // Candidate TP sizes: the size of each collective group kind, most frequent first, and 1.
  std::map<size_t, double> ops_by_size;
  for (const auto& g : groups)
    if (!g.p2p) ops_by_size[g.ranks.size()] = std::max(ops_by_size[g.ranks.size()], g.ops);
  std::vector<int> tps = {1};
  for (auto [size, ops] : ops_by_size) tps.push_back(int(size));
  std::optional<LayoutGuess> best;
  for (int pp : depths_to_try(groups, ranks, world))
    for (int tp : tps) {
      if (world % (tp * pp) != 0) continue;
      const int dp = world / (tp * pp);
      for (RankOrder order : kRankOrders) {
        ParallelLayout l{tp, pp, dp, order};
        double explained = 0, total = 0, tp_ops = 0, other_ops = 0;
        for (const auto& g : groups) {
          total += 1;
          CommunicatorGroup grp;
          if (layout_explains(l, g.ranks, g.p2p, &grp)) {
            explained += 1;
            if (!g.p2p) (grp.kind == GroupKind::TP ? tp_ops : other_ops) = std::max(grp.kind == GroupKind::TP ? tp_ops : other_ops, g.ops);
          }
        }
        // TP carries the most frequent collectives: a layout calling the rarer groups TP is worse.
        const bool rare_tp = tp > 1 && (other_ops > tp_ops || (pp > 1 && too_rare_for_tp(groups, tp_ops)));
        const double score = explained / total - (rare_tp ? 0.5 : 0.0);
        // Ties keep the first found: the chains' own depth, TP 1 before larger, Megatron's order.
        if (!best || score > best->consistency + 1e-9 ||
            (std::abs(score - best->consistency) < 1e-9 && order == RankOrder::TpDpPp && best->layout.order != order &&
             best->layout.tp == tp && best->layout.pp == pp)) {
          best = LayoutGuess{l, score, ""};
        }
      }
    }
  if (!best || best->consistency < 0.8) return std::nullopt;
  size_t p2p = 0, coll = 0;
  for (const auto& g : groups) (g.p2p ? p2p : coll)++;
  best->how = fmt::format("{} collective groups and {} pipeline links", coll, p2p);
  return best;
}

}  // namespace topology
