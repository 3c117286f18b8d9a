// Holistic Trace Analysis (HTA, github.com/facebookresearch/HolisticTraceAnalysis) per-rank
// figures, as HTA's source computes them, so that users who know HTA can compare numbers
// (docs/metrics.md, "HTA-comparable breakdown", cites the HTA functions each step follows):
//  * temporal breakdown (hta/analyzers/breakdown_analysis.py, get_temporal_breakdown):
//      kernel span = end of the last GPU event - start of the first (kernels, memcpy, memset);
//      idle = span - |union of all GPU events|; compute = |union of COMPUTATION kernels|;
//      non-compute = span - compute - idle; each % = 100 * x / span.
//  * comm/comp overlap (hta/analyzers/communication_analysis.py, get_comm_comp_overlap):
//      100 * |union(COMMUNICATION) n union(COMPUTATION)| / |union(COMMUNICATION)|.
// Kernels are classified by NAME with HTA's regexes (hta/common/types.py), not by our NCCL
// annotation: the point is to equal HTA on the same events (a kernel whose name HTA does not call
// communication is not communication here either). Memcpy/memset are MEMORY (non-compute).
// Like HTA: events whose launch starts at or after the start of the last ProfilerStep are dropped
// (Trace._filter_irrelevant_gpu_kernels), and times are rounded to whole microseconds of the
// file's clock (utc_epoch_ns + t), start up and end down (trace_parser.round_down_time_stamps),
// unless the options say otherwise. Format-independent: any reader's timeline.
// These figures are HTA's, not ours: our own compute/idle/exposed-NCCL live in metrics.hpp.
#pragma once
#include <cstdint>
#include <limits>
#include <string_view>

#include "ranks/timeline.hpp"

namespace ranks {

// HTA's KernelType (hta/utils/utils.py), by the first of its tests that matches (get_kernel_type).
enum class HtaKernelType : uint8_t { Communication, Memory, Computation, Other };
HtaKernelType hta_kernel_type(std::string_view name);

struct HtaOptions {
  // HTA's TraceAnalysis(include_last_profiler_step=False) default: the last step is dropped.
  bool include_last_profiler_step = false;
  // HTA rounds float-microsecond timestamps (ts up, ts + dur down) unless HTA_DISABLE_NS_ROUNDING=1.
  bool round_to_us = true;
};

struct HtaBreakdown {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // In ns (whole microseconds times 1000 when round_to_us). HTA names: idle_time(us),
  // compute_time(us), non_compute_time(us), kernel_time(us).
  int64_t idle_ns = 0, compute_ns = 0, non_compute_ns = 0, kernel_span_ns = 0;
  // 100 * x / kernel_span_ns, not rounded (HTA rounds to 2 decimals: print with {:.2f}); NaN when
  // the span is 0 (HTA fails on a rank without GPU events).
  double idle_pct = kNaN, compute_pct = kNaN, non_compute_pct = kNaN;
  // 100 * overlap_ns / comm_ns (HTA: comp_comm_overlap_pctg); NaN without communication time.
  double comm_overlap_pct = kNaN;
  int64_t comm_ns = 0, overlap_ns = 0;  // |union(COMMUNICATION)| and its part under COMPUTATION
  int64_t events = 0;                   // GPU events counted (kernels + copies kept)
  int64_t cut = kNoTime;                // start of the last ProfilerStep when the cut applied
};

HtaBreakdown hta_breakdown(const RankTimeline& tl, const HtaOptions& opt = {});

}  // namespace ranks
