// Megatron-style parallel layout: which TP, PP and DP group each global rank belongs to.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace topology {

// Rank orders, fastest-varying dimension first: Megatron's default "tp-dp-pp" (rank = tp + TP *
// (dp + DP * pp); Megatron-Core's tp-cp-ep-dp-pp is the same with CP = EP = 1), "tp-pp-dp" (used
// by some launchers), and the other four, which Megatron-Core's `order` string allows and
// launchers that place data-parallel replicas or stages side by side produce.
enum class RankOrder : uint8_t { TpDpPp, TpPpDp, DpTpPp, DpPpTp, PpTpDp, PpDpTp };
inline constexpr RankOrder kRankOrders[] = {RankOrder::TpDpPp, RankOrder::TpPpDp, RankOrder::DpTpPp,
                                            RankOrder::DpPpTp, RankOrder::PpTpDp, RankOrder::PpDpTp};
const char* rank_order_name(RankOrder o);
// The order named `name` ("dp-tp-pp"); the default order for a name that is none.
RankOrder rank_order_from_name(const std::string& name);

struct ParallelLayout {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  RankOrder order = RankOrder::TpDpPp;

  int world() const { return tp * pp * dp; }
  int tp_rank(int rank) const { return (rank / stride(0)) % tp; }
  int dp_rank(int rank) const { return (rank / stride(1)) % dp; }
  int pp_rank(int rank) const { return (rank / stride(2)) % pp; }
  int rank_of(int tp_r, int dp_r, int pp_r) const { return tp_r * stride(0) + dp_r * stride(1) + pp_r * stride(2); }
  // The rank distance between neighbours along dimension d (0 TP, 1 DP, 2 PP).
  int stride(int d) const;
  bool operator==(const ParallelLayout&) const = default;

  // Parses "TPxPPxDP" such as "2x2x8"; throws std::invalid_argument.
  static ParallelLayout parse(const std::string& text);
  std::string to_string() const;
};

enum class GroupKind : uint8_t { TP, PP, DP, World };
const char* group_kind_name(GroupKind k);

// One communicator of the layout: its kind, index among groups of that kind, and member ranks
// (ascending). Names are "tp-3", "pp-0", "dp-5": stable, used in reports and the summary.
struct CommunicatorGroup {
  GroupKind kind;
  int index;
  std::vector<int> ranks;
  std::string name() const;
};

// All TP, DP and PP groups of the layout (groups of size 1 are omitted).
std::vector<CommunicatorGroup> communicator_groups(const ParallelLayout& layout);

// The group of `kind` containing `rank`.
CommunicatorGroup group_of(const ParallelLayout& layout, GroupKind kind, int rank);

// Hosts: ranks are placed on hosts in contiguous blocks of world/hosts.
struct HostPlacement {
  int hosts = 1;
  int gpus_per_host(int world) const { return (world + hosts - 1) / hosts; }
  int host_of(int rank, int world) const { return rank / gpus_per_host(world); }
  int local_rank(int rank, int world) const { return rank % gpus_per_host(world); }
};

std::string host_name(int host_index);  // "node-00", "node-01", ...

}  // namespace topology
