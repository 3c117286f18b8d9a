#include "crash_timing.hpp"

#include <algorithm>
#include <set>

#include "rng.hpp"

namespace sim {

bool crash_run(const Simulation& sim) {
  for (const RankTrace& tr : sim.ranks)
    if (tr.crashed_at >= 0) return true;
  return false;
}
namespace {
int64_t jitter_ns(const Simulation& sim, int rank, int64_t max) {
  return int64_t(hash4(sim.opt.seed, 0xDEAD, uint64_t(rank), 0) % uint64_t(max));
}
}  // namespace

int64_t watchdog_at(const Simulation& sim, int rank) {
  const int64_t since = sim.ranks[rank].pending_since;  // the first launch that never completed
  if (!crash_run(sim) || since < 0) return -1;
  return since + kWatchdogNs + jitter_ns(sim, rank, 2'000'000'000);
}
int watchdog_aborts(const Simulation& sim, const Conventions& cv, int rank) {
  const int streams = int(cv.created[rank].size()) - 1;
  if (streams > 0) return streams;
  std::set<int32_t> keys;
  for (const Op& op : sim.ranks[rank].ops)
    if (op.type == OpType::Coll) keys.insert(op.key);
  return int(keys.size());
}
int64_t rank_stop(const Simulation& sim, const Conventions& cv, int rank) {
  if (sim.ranks[rank].crashed_at >= 0) return sim.ranks[rank].crashed_at + 20'000'000 + jitter_ns(sim, rank, 280'000'000);
  const int64_t w = watchdog_at(sim, rank);
  return w < 0 ? -1 : w + watchdog_aborts(sim, cv, rank) * kAbortNs + 200'000'000 + jitter_ns(sim, rank, 600'000'000);
}

std::vector<int64_t> capture_stops(const Simulation& sim, const Conventions& cv) {
  int64_t stop = 0;  // as write_nsys_file, on the true clock
  for (const RankTrace& tr : sim.ranks)
    for (const Op& op : tr.ops) stop = std::max({stop, op.pending ? op.cpu_end : op.end, op.cpu_end});
  std::vector<int64_t> out(size_t(sim.world), stop + 2'000'000'000);
  if (!crash_run(sim)) return out;
  for (int r = 0; r < sim.world; ++r) out[size_t(r)] = rank_stop(sim, cv, r);
  const int64_t kill = std::max(stop + 2'000'000'000, *std::max_element(out.begin(), out.end()));
  for (int64_t& t : out) t = t < 0 ? kill : t;
  return out;
}

}  // namespace sim
