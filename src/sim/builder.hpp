// Internal to the simulator: what each rank issues (its op list in CPU order), built from the
// run's layout and faults. The timing of the ops is schedule.cpp's discrete-event simulation.
#pragma once
#include <cstdint>
#include <vector>

#include "fabric.hpp"
#include "schedule.hpp"

namespace sim {

constexpr int64_t kUs = 1000;

// Everything that does not change per op: layout, keys, per-rank key lookups.
struct RunCtx {
  Options o;
  int world = 0, gph = 0, P = 1;
  topology::HostPlacement hp;
  SimFabric fabric;
  std::vector<CommInfo> comms;
  std::vector<CollKey> keys;
  std::vector<int> tp_key, dp_key, link_next, link_prev;  // per rank, -1 when absent
  // Interleaved schedule: the wrap-around link from the last stage (its wrap_out) to the first (its wrap_in).
  std::vector<int> wrap_out, wrap_in;
  int host_of(int r) const { return hp.host_of(r, world); }
};

// Appends iterations [first, end) of `rank`'s ops to tr.ops; seq: per key, the next issue index.
void build_ops(const RunCtx& c, int rank, RankTrace& tr, std::vector<int32_t>& seq, int first, int end);

}  // namespace sim
