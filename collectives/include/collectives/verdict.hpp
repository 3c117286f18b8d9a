// Straggler verdict: who holds the others back, since when, and why.
//
// Who. Lateness propagates: the TP partner of a slow GPU waits for it, then arrives late at its
// data-parallel all-reduce and is "last" there too. What separates the cause from its victims is
// its own time: own = step time - exposed communication (Scalasca's "delay": time with an NCCL
// kernel running and no compute kernel, ranks/iteration_work.hpp; without it, the waits inside
// collectives). A gradient bucket waiting on the DP stream while the backward runs on holds the
// rank up in nothing; the tail in which a late peer's delayed buckets drain does. Per
// steady iteration, excess = own - median own of the peers of the same role (pipeline stage when
// the layout is known, else all ranks). Ranks are compared only over the iterations every rank
// has and before the first desync (a hung rank or a capture that ends early leaves the others'
// later collectives unmatched, which would look like own time). A rank is a straggler when, over
// the whole steady run or over the stretch after (or before) a change point of the job step time
// or of its own excess (so that a small or late slowdown is not averaged away):
//   * its summed excess is an outlier: > median + 6 x (1.4826 MAD) of the role's excesses (for a
//     role of two, whose pair cannot say which one is off, the MAD of all ranks' residuals from
//     their role medians), the MAD floored at 0.25% of that stretch's run time, so at least 1.5%
//     of it (healthy runs with 5-10% kernel jitter reach a robust z of about 1-3), and
//   * it matters: excess and blame (peer time spent waiting for it) in that stretch are each
//     >= 1% of its run time (sum of the job's median step times), and
//   * it repeats: its excess is high (per-iteration robust z >= 2.5 among its role) in enough of
//     the stretch's iterations that chance would give that to none of the ranks compared
//     (collectives/consistency.hpp: the evidence needed grows with the ranks compared and shrinks
//     with the iterations seen; a stretch picked at a change point counts as 8 tries; a capture too
//     short for any rank to pass names nobody and says so).
//   A host-side delay hides in own time when GPUs differ in speed by as much (a 2.4% stall among
//   GPUs +-2% apart), but GPU speed makes no idle time: a rank also qualifies, over the whole
//   steady run, when its extra GPU idle per iteration repeats by the same test, sums to >= 1% of the run, its peers wait on it
//   (blame >= 1%) and its own time is above its role's median.
//   Stage peers do the same work, so a slow stage is a pipeline imbalance (a later analysis), not
//   a straggler.
// Since when. onset = the first iteration with excess above half its slow level (median of its
//   upper half of positive excesses) from which the share of such iterations is at least 90% of
//   the share in the later half of the slow stretch: a steady slowdown dates from its first
//   iteration, a periodic one (a GC pause every other iteration) from its first occurrence.
// Why (over iterations from the onset on, against role peers' medians; the Cause enum):
//   slow_gpu    the same kernels (its top kernels by time, matched by name) take >= 1.08x longer;
//   extra_work  else, >= 1.08x the compute kernels or compute time per iteration;
//   slow_link   else, its transfers (end - last arrival) exceed its peers' by >= half its excess and
//               a communicator of its is >= 1.5x slower than its like; a rank whose slow
//               communicators are all named in slow_links is not listed (the link is the finding);
//   host_delay  else, SM idle per iteration (no kernel running; copies count as idle, so a host-side
//               copy is a host delay) exceeds peers' by >= 50% of its excess per iteration (the
//               GPU sat idle before the late arrival);
//   unknown     otherwise.
// Slow links: a communicator is compared only with its like: the same family (same collective
//   sequence, rate and size) or, for pipeline p2p, every two-member SendRecv link; and the same
//   number of hosts (NVLink inside a host is not a slow NIC). Those >= 1.5x the group's lower
//   quartile of median transfer time are slow (when at most half of the group is); the hosts
//   common to all slow ones (else those in most of them) are named: a ring is as slow as its
//   slowest hop, so a link is narrowed down only as far as the communicators allow. Rows that
//   share hosts merge into the shared hosts (one slow NIC seen by all-reduce and p2p). A link
//   that turns slow late leaves its capture-wide median alone: per iteration, a communicator at
//   >= 1.5x its like's lower half from some iteration on (three in four of at least two
//   iterations, after three in four under it) is slow from there (`onset_iteration`).
// Change points in the job step time (median over ranks per iteration, warm-up excluded), with
//   ranks/changepoint.hpp; culprits are the ranks whose excess own time rose there by at least
//   half of the step-time shift.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "collectives/nccl_kernel.hpp"
#include "ranks/findings.hpp"

namespace collectives {

// Why a rank is a straggler. Strings only at the edges: cause_name() gives the public names of
// docs/summary-contract.md ("" for None).
enum class Cause : uint8_t { None, SlowGpu, ExtraWork, SlowLink, HostDelay, Unknown };
const char* cause_name(Cause c);

// Every threshold named above, with today's values (shares are of the judged stretch's run time
// unless said otherwise).
struct VerdictOptions {
  double outlier_z = 6;              // robust z of summed excess within the role
  double spread_floor = 0.0025;      // the MAD is floored at this share of the run time
  double min_excess = 0.01;          // it matters: excess >= this share of the run time
  double min_blame = 0.01;           // ... and blame >= this share
  double own_shift_z = 8;            // a change against its own baseline qualifies without blame
  double own_shift_excess = 0.02;    // ... when its excess is >= this share
  double shift_spread_floor = 0.005;  // own-shift MAD floor: share of the mean job step time
  double onset_level = 0.5;          // onset: excess above this share of its slow level ...
  double onset_stay = 0.9;           // ... sustained: this share of the later stretch's rate of high iterations
  double slow_gpu_ratio = 1.08;      // same kernels this much longer
  double extra_work_ratio = 1.08;    // this many more compute kernels or compute time
  double slow_link_transfer = 0.5;   // slow_link: extra transfer time >= this share of its excess
  double host_delay_idle = 0.5;      // host_delay: extra GPU idle >= this share of its excess
  double slow_link_ratio = 1.5;      // a communicator this much slower than its like's lower quartile
  double slow_link_max_share = 0.5;  // ... when at most this share of its like is that slow
  double culprit_shift = 0.5;        // change-point culprits: excess moved by this share of the shift
  double consistency_z = 2.5;        // per-iteration robust z of a "high" iteration (consistency.hpp)
  double consistency_floor = 0.005;  // ... its MAD floored at this share of the iteration's job step
  double chance_floor = 0.02;        // least chance rate of a high iteration assumed
  // Chance of naming one rank by chance, over all ranks compared (and, for a stretch picked at a
  // change point, over every stretch that could have been picked). 0.05 named a rank in one of 53
  // healthy matrix runs (three 5 ms hiccups in a row on one of 64 ranks); 0.01 lost late onsets and
  // 1024-rank captures of 3 iterations (bench/RESULTS.md).
  double family_alpha = 0.02;
};

struct RankEvidence {
  int rank = -1;
  std::string host;
  int role = 0;
  double ops = 0, late = 0, wait_ns = 0, blame_ns = 0, hold_ns = 0;
  double transfer_ns = 0;  // summed over its matched collectives (end - last arrival)
  std::vector<double> blame_by_iteration, wait_by_iteration;  // ns, by iteration index
  // Per iteration index (index 0 = warm-up):
  std::vector<int64_t> iteration_number;
  std::vector<double> step_ms, compute_ms, kernels, idle_ms;
  std::vector<double> comm_ms;  // exposed communication (ranks/iteration_work.hpp); empty: unknown
  // Its top compute kernels: name and per-iteration (total ns, count).
  std::vector<std::string> top_names;
  std::vector<std::vector<double>> name_ns, name_count;  // [name][iteration]
  std::vector<ranks::RankFinding> findings;  // root causes seen on this rank (root_causes.hpp)
};

struct CommEvidence {
  std::string name;
  CollectiveType type = CollectiveType::Unknown;
  uint64_t family = 0;  // same value = same collective sequence and member count
  std::vector<int> ranks;
  std::vector<std::string> hosts;  // distinct
  double median_transfer_ns = 0;
  int64_t ops = 0;
  // Median transfer of its ops in each iteration (index into the ranks' iterations; NaN: none):
  // a link that slows late leaves the capture-wide median alone.
  std::vector<double> transfer_by_iteration;
};

struct Straggler {
  int rank = -1;
  std::string host, evidence;
  std::string why;  // the cause's own evidence (also in `evidence`, after the verdict's figures)
  Cause cause = Cause::None;
  double blame_ms = 0, hold_ms = 0, late_fraction = 0, score = 0, excess_ms = 0;
  int64_t onset_iteration = -1;  // iteration number; -1 when unknown
  int64_t iterations_after_onset = 0;  // steady iterations from the onset on that judged it (the evidence's strength)
  // Findings that set it apart from its peers, costliest first; the costliest host-side one
  // refines host_delay (collectives/root_causes.hpp).
  std::vector<ranks::Finding> findings;
  ranks::Finding cause_detail = ranks::Finding::None;
  // Its compute kernels' time against its own iterations before the onset, where that, not its
  // role peers, showed the slow GPU (they slowed with it: a host that is a whole stage); 0: not so.
  // The what-if then fixes it by this factor where no healthy peer is left (docs/what-if.md).
  double own_slowdown = 0;
  // What the job's step loses to it since its onset (src/analyses/what_if.hpp, charge_costs: its
  // share of the what-if saving in each phase from the onset on, weighted by their iterations; the
  // last phase without an onset); NaN where it was not replayed.
  double cost_ms_per_step = std::numeric_limits<double>::quiet_NaN();
  double cost_pct = std::numeric_limits<double>::quiet_NaN();
};

struct SlowLink {
  std::vector<std::string> hosts, communicators;
  std::string collective;
  double slowdown = 0;
  int64_t onset_iteration = -1;  // iteration number its transfers turned slow from; -1: slow throughout
  // Its transfers against their own iterations before the onset, where its whole like turned slow
  // together (none left to compare with); 0: found against its like. The what-if then divides its
  // transfers by this from the onset on.
  double own_slowdown = 0;
  double cost_ms_per_step = std::numeric_limits<double>::quiet_NaN();  // as Straggler's
  double cost_pct = std::numeric_limits<double>::quiet_NaN();
};

// What a slow link's transfers were against: "SendRecv transfers 3.89x slower than their like".
std::string slow_link_evidence(const SlowLink& l);

struct JobChangePoint {
  int64_t iteration = 0;
  double before_ms = 0, after_ms = 0;
  std::vector<int> culprit_ranks;
  std::string explanation;  // what the verdict says caused it (stragglers, slow link, the whole job)
  int64_t iterations_after = 0;  // common steady iterations from it to the end (not a table column)
};

struct Verdict {
  std::vector<Straggler> stragglers;  // by blame, largest first
  std::vector<SlowLink> slow_links;
  std::vector<JobChangePoint> change_points;
  std::vector<double> score;          // per input rank (same order): robust z of blame in its role
  std::vector<Cause> cause;           // per input rank: cause if a straggler, else None
  std::vector<double> job_step_ms;    // per iteration index: median over ranks
  // The evidence the verdict had: steady iterations every rank has (before any desync), ranks
  // compared, and the least steady iterations in which a rank slow in every one could be named
  // (-1: no number would do). Fewer judged than needed: too short to name any straggler.
  int64_t judged_iterations = 0, compared_ranks = 0, needed_iterations = 0;
  bool too_short() const {
    return compared_ranks > 1 && (needed_iterations < 0 || judged_iterations < needed_iterations);
  }
};

// `clean_iterations`: iteration indexes [0, n) before the first desync (SIZE_MAX: no desync).
Verdict decide(const std::vector<RankEvidence>& ranks, const std::vector<CommEvidence>& comms,
               size_t clean_iterations = SIZE_MAX, const VerdictOptions& opt = {});

}  // namespace collectives
