// Two runs compared (`straggler-scan compare GOOD BAD`, docs/compare.md): the step and MFU, the
// waterfalls side by side, each kernel name's count and time per step across all ranks (HTA's
// TraceDiff, over every rank rather than one trace), the stragglers and findings that appeared or
// went away. Pure: the runs come in as digests of their scans (src/compare_command.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyses/waterfall.hpp"

namespace straggler::compare {

// One run as compare sees it.
struct RunDigest {
  std::string path;
  double step_ms = 0;                          // the mean step of its last phase (what-if window)
  int64_t from_iteration = -1, to_iteration = -1;
  double mfu = -1;                             // over that window; < 0 unknown
  std::vector<analyses::WaterfallRow> waterfall;  // its last phase
  // Per kernel name: per rank, count and ms per steady step (ranks without the name: 0); for an
  // NCCL kernel, the part of ms spent waiting for the last member to arrive (digest_waits).
  struct Kernel {
    uint8_t nccl = 0;
    std::vector<double> count, ms, wait;
  };
  std::map<std::string, Kernel> kernels;
  int32_t ranks = 0;
  std::vector<int32_t> rank_ids;  // the rank of each position in the per-rank vectors
  int32_t waiting_for = -1;       // the rank its waits are most charged to (-1: none known)
  std::vector<std::pair<int32_t, std::string>> stragglers;             // rank, cause
  std::vector<std::pair<std::string, std::vector<int32_t>>> findings;  // finding, ranks
};

struct KernelDelta {
  std::string name, change;  // change: added, removed, more_frequent, fewer, slower, faster, unchanged
  uint8_t nccl = 0, significant = 0;  // significant: its own work changed beyond the noise
  double good_count = 0, bad_count = 0;  // per rank per step (mean over ranks)
  double good_ms = 0, bad_ms = 0, delta_ms = 0;  // all its time, waiting included
  double noise_ms = 0;  // the threshold |own_delta_ms| had to pass (options below)
  // Its own work (its time less its waiting): the change on the rank where it changed most (the
  // runs' ranks paired; own_rank) when that passes the noise, else the mean over ranks (own_rank -1).
  double own_delta_ms = 0;
  int32_t own_rank = -1;
  // NCCL kernels: the part of its time spent waiting for the last member (mean over ranks), and the
  // rank the bad run's waits are for.
  double good_wait_ms = 0, bad_wait_ms = 0;
  int32_t waiting_for = -1;
};
// Waits per rank per NCCL kernel name: its time beyond the least time per launch any rank spends
// in that name, times its launches. The last member to arrive waits nothing, so that least is the
// transfer; the rest of a member's time in the kernel is waiting for the last one.
void digest_waits(RunDigest& d);

struct WaterfallDelta {
  std::string part, label;
  double good_ms = 0, bad_ms = 0, delta_ms = 0;
};

struct ChangeRow {  // a straggler or finding that appeared, went away or stayed
  std::string kind, what, status;  // kind: straggler, finding; status: appeared, gone, both
  std::vector<int32_t> ranks;
};

struct Comparison {
  double good_step_ms = 0, bad_step_ms = 0, step_ratio = 0;  // bad / good
  double good_mfu = -1, bad_mfu = -1;
  std::vector<KernelDelta> kernels;  // significant first, by |delta_ms|; then the rest
  std::vector<WaterfallDelta> waterfall;
  std::vector<ChangeRow> changes;
};

// A kernel delta is significant when it passes every one of these (docs/compare.md).
struct CompareOptions {
  double noise_z = 4;            // |delta| > z x its standard error over the ranks of both runs
  double min_relative = 0.02;    // ... and > this share of the kernel's time in the good run
  double min_step_share = 0.001;  // ... and > this share of the good run's step
  double ratio = 1.05;           // more_frequent/fewer, slower/faster: count or mean time this much apart
};

Comparison compare_runs(const RunDigest& good, const RunDigest& bad, const CompareOptions& opt = {});

}  // namespace straggler::compare
