#include "topology/layout.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

namespace topology {

ParallelLayout ParallelLayout::parse(const std::string& text) {
  ParallelLayout l;
  char x1 = 0, x2 = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c%d%n", &l.tp, &x1, &l.pp, &x2, &l.dp, &consumed) != 5 ||
      (x1 != 'x' && x1 != 'X') || (x2 != 'x' && x2 != 'X') || consumed != int(text.size()) ||
      l.tp < 1 || l.pp < 1 || l.dp < 1)
    throw std::invalid_argument("layout must be TPxPPxDP with positive integers, e.g. 2x2x8: '" + text + "'");
  // Structures are sized by the world: bounded before any product can overflow int.
  constexpr int64_t kMax = int64_t(1) << 21;
  if (int64_t(l.tp) * l.pp > kMax || int64_t(l.tp) * l.pp * l.dp > kMax)
    throw std::invalid_argument("layout '" + text + "' covers more than the " + std::to_string(kMax) +
                                " ranks straggler-scan handles");
  return l;
}

namespace {
// Per order, its dimensions fastest first (0 TP, 1 DP, 2 PP), in RankOrder's order.
constexpr int kDims[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
constexpr const char* kNames[6] = {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"};
}  // namespace

const char* rank_order_name(RankOrder o) { return size_t(o) < 6 ? kNames[size_t(o)] : kNames[0]; }

RankOrder rank_order_from_name(const std::string& name) {
  for (RankOrder o : kRankOrders)
    if (name == rank_order_name(o)) return o;
  return RankOrder::TpDpPp;
}

int ParallelLayout::stride(int d) const {
  const int size[3] = {tp, dp, pp};
  const int* dims = kDims[size_t(order) < 6 ? size_t(order) : 0];
  int s = 1;
  for (int i = 0; i < 3 && dims[i] != d; ++i) s *= size[dims[i]];
  return s;
}

std::string ParallelLayout::to_string() const { return fmt::format("{}x{}x{}", tp, pp, dp); }

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::TP: return "tp";
    case GroupKind::PP: return "pp";
    case GroupKind::DP: return "dp";
    case GroupKind::World: return "world";
  }
  return "?";
}

std::string CommunicatorGroup::name() const { return fmt::format("{}-{}", group_kind_name(kind), index); }

CommunicatorGroup group_of(const ParallelLayout& l, GroupKind kind, int rank) {
  const int t = l.tp_rank(rank), d = l.dp_rank(rank), p = l.pp_rank(rank);
  CommunicatorGroup g{kind, 0, {}};
  switch (kind) {
    case GroupKind::TP:
      g.index = d + l.dp * p;
      for (int i = 0; i < l.tp; ++i) g.ranks.push_back(l.rank_of(i, d, p));
      break;
    case GroupKind::DP:
      g.index = t + l.tp * p;
      for (int i = 0; i < l.dp; ++i) g.ranks.push_back(l.rank_of(t, i, p));
      break;
    case GroupKind::PP:
      g.index = t + l.tp * d;
      for (int i = 0; i < l.pp; ++i) g.ranks.push_back(l.rank_of(t, d, i));
      break;
    case GroupKind::World:
      for (int r = 0; r < l.world(); ++r) g.ranks.push_back(r);
      break;
  }
  return g;
}

std::vector<CommunicatorGroup> communicator_groups(const ParallelLayout& l) {
  std::vector<CommunicatorGroup> out;
  const struct { GroupKind kind; int size; int count; } kinds[] = {
      {GroupKind::TP, l.tp, l.dp * l.pp}, {GroupKind::DP, l.dp, l.tp * l.pp}, {GroupKind::PP, l.pp, l.tp * l.dp}};
  for (const auto& k : kinds) {
    if (k.size < 2) continue;
    for (int r = 0; r < l.world(); ++r) {
      auto g = group_of(l, k.kind, r);
      if (g.ranks.front() == r) out.push_back(std::move(g));
    }
  }
  return out;
}

std::string host_name(int host_index) { return fmt::format("node-{:02d}", host_index); }

}  // namespace topology
