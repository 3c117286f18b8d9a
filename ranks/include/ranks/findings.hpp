// Root-cause findings of one rank: the Book of Root Causes (../shared/docs/domain/) as signatures
// over one RankTimeline and its RankMetrics. docs/findings.md points here; each finding's
// signature, threshold (FindingOptions), cost and evidence are defined below and nowhere else.
//
// Terms. scope = the steady state of metrics.hpp (warm-up excluded). steps = steady iterations in
// scope (1 when the iterations are unknown: "per step" then means per capture window). A GPU gap
// is a hole in the union of all GPU activity (kernels and copies, every stream): the whole GPU did
// nothing. A gap's cause, seen from the host: "after sync" when a synchronize call (or a blocking
// cudaMemcpy) returned inside it; else "no launch queued" when the kernel that ends it was launched
// after the GPU went idle (the host was late); else "queued" (launched in time, waiting on a
// dependency); "unknown" when the launch is not in the profile. A gap is "at an iteration start"
// when an iteration starts inside it (+- 2% of the median step).
//
//  gc_pause           >= 3 gaps >= long_gap_ns, not after a sync, whose lengths agree within 3x
//                     (the largest such group), at most a third of them at an iteration start,
//                     whose starts repeat with a regular period (>= 75% of the intervals within 20%
//                     of their median, or a coefficient of variation of the intervals <= 0.35, or
//                     one pause in >= 75% of the iterations they span):
//                     Python's garbage collector runs by allocation count, not at step boundaries.
//                     Cost: those gaps per step.
//  gpu_bubbles        gaps >= long_gap_ns not claimed by gc_pause or module_loading (nor, when
//                     excessive_sync holds, those after a sync) summing to >= 2% of the scope. Cost:
//                     their time per step.
//                     Evidence: count, longest, and causes.
//  excessive_sync     the host is blocked in synchronize calls (and blocking copies) >= 10% of the
//                     scope and synchronizes more than once per step: >= 2 per marked step; without
//                     step markers, a sync for every <= 3 NCCL kernels (a distributed training step
//                     issues >= 4 collectives: DDP buckets, 2 per layer and pass under TP, 2-3 per
//                     layer under FSDP; a collective-period unit may be a few layers, or several
//                     steps). Cost: GPU idle in gaps after a sync, per step.
//  cpu_bottleneck     >= 50 kernels with a launch call, the GPU busy < 80% of the scope and >= 50% of
//                     its compute kernels start within 30 us of their launch call's end (launches
//                     arrive just in time). Cost: GPU idle per step that no other finding of the rank
//                     costs (idle is costed once: module_loading, gc_pause, excessive_sync,
//                     gpu_bubbles and small_kernels claim theirs first); raised when that remainder
//                     is >= 1% of the scope.
//  nccl_serialization NCCL kernels on a stream that also runs >= 5% of the compute kernel time, when
//                     NCCL takes >= 20% of the scope (the catalogue's red flag: below it, overlap
//                     has little to win, and NCCL between its own pack and unpack kernels could not
//                     overlap anyway) and their transfer part is >= 1% of it. Transfer part: per
//                     kernel, at most the lower quartile of its name's durations (the rest is waiting
//                     for peers, which overlap would not save). Cost: that transfer time, at most
//                     the compute time it could hide behind, per step.
//  excessive_h2d      host-to-device copies >= 5% of the scope. Cost: copy time no kernel overlaps,
//                     per step. Evidence also gives SM idle (no kernel running): copies keep the
//                     copy engines busy while the SMs wait.
//  small_kernels      >= 50 compute kernels under 10 us in the scope whose launch calls take longer
//                     than they run, when the time at stake (GPU time in them plus the GPU idle right
//                     after them while the host is still launching the next kernel, under
//                     long_gap_ns) is >= 2% of the scope (less a one-time stall module_loading
//                     costs): judged per unit of time, so a repeating unit of a few layers works as
//                     well as a step. Cost: that time at stake per step.
//  kernel_hotspot     one compute kernel name > 50% of compute kernel time (>= 1% of the scope).
//                     A place to look, not a saving: cost 0 (its time is in the evidence), so it
//                     never outranks lost time.
//  module_loading     one-time device-code loading and compilation: GPU idle (between GPU activity,
//                     whole capture) while a module-load call (cuLibraryLoadData, cuModuleLoad*,
//                     cuLinkComplete) or a compile NVTX range (names with nvrtc, compile, jit or
//                     autotun, any case) runs, >= 5 ms and >= 2% of the capture span: needs no
//                     iterations. Else, with iterations: the first (warm-up) iteration's GPU idle
//                     exceeds a steady step's mean idle by >= 2 median steps, with its longest gap
//                     >= 5x the longest steady gap (and >= long_gap_ns): a one-time host stall
//                     (import, JIT, autotuning), not repeated. Cost: that idle, spread over the
//                     captured steps; gpu_bubbles does not cost those gaps again.
//  comm_imbalance     cross-rank (collectives/root_causes.hpp): more compute per step than its
//                     role's peers while waiting less in collectives.
// severity = the signature's measured value over its threshold (>= 1 when raised). unit: what "per
// step" is: a marked step, a repeating unit (collective period) or the capture window.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/metrics.hpp"
#include "ranks/timeline.hpp"

namespace ranks {

enum class Finding : uint8_t {
  GpuBubbles, CpuBottleneck, NcclSerialization, ExcessiveH2D, SmallKernels, KernelHotspot, GcPause,
  CommImbalance, ModuleLoading, ExcessiveSync, None
};
inline constexpr int kFindingCount = int(Finding::None);
const char* finding_name(Finding f);  // "gpu_bubbles", ...; "" for None
std::optional<Finding> finding_from_name(std::string_view name);
// Findings the host causes (they refine a host_delay straggler).
bool host_side(Finding f);

struct FindingOptions {
  int64_t long_gap_ns = 1'000'000;   // gaps that count as bubbles or pauses
  double iteration_edge = 0.02;      // "at an iteration start": within this share of the step
  double bubble_share = 0.02;
  int gc_min_pauses = 3;
  double gc_period_tolerance = 0.2, gc_regular_share = 0.75, gc_max_at_start = 1.0 / 3, gc_length_spread = 3;
  double gc_max_interval_cv = 0.35;  // random spacing scatters ~1 (exponential intervals)
  double sync_blocked_share = 0.10, sync_per_step = 2, sync_nccl_per_sync = 3;
  double busy_max = 0.8, jit_slack_ns = 30'000, jit_share = 0.5;
  double cpu_min_kernels = 50, cpu_min_share = 0.01;
  double nccl_stream_compute_share = 0.05, nccl_serial_share = 0.01, nccl_flag_share = 0.20;
  double h2d_share = 0.05;
  int64_t small_kernel_ns = 10'000;
  double small_min_count = 50, small_share = 0.02;
  double hotspot_share = 0.5, hotspot_min_compute = 0.01;
  double compile_idle_steps = 2, compile_gap_ratio = 5;
  int64_t load_min_ns = 5'000'000;
  double load_share = 0.02;
};

struct RankFinding {
  int32_t rank = -1;  // set once ranks are agreed
  Finding finding = Finding::None;
  double severity = 0;
  double cost_ms_per_step = 0;
  std::string evidence;  // printable, one line
  std::string unit = "step";  // "step", "repeating unit" or "window": what cost_ms_per_step is per
};

// The per-rank findings (all but comm_imbalance), in Finding order.
std::vector<RankFinding> find_rank_findings(const RankTimeline& tl, const RankMetrics& m, const FindingOptions& opt = {});

}  // namespace ranks
