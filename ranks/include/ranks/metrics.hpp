// Per-rank metrics of one RankTimeline. Definitions (docs/metrics.md points here):
//  * GPU activity = kernels plus memcpy/memset; busy = length of the union of activity intervals.
//  * compute = union of non-NCCL kernels; nccl = union of NCCL kernels;
//    exposed nccl = nccl time not overlapped by any compute kernel (|nccl \ compute|).
//  * idle = scope length - busy; idle gaps = holes between consecutive busy intervals.
//  * scope: the steady state (start of the second iteration to the end of the last) when at least
//    two iterations were found, else the whole GPU window (first activity start to last end).
//    The first iteration is warm-up: listed, never part of steady-state figures.
//  * host sync = explicit synchronize calls plus synchronous cudaMemcpy (they block the host).
//  * hta: Holistic Trace Analysis' temporal breakdown and comm/comp overlap, by HTA's own
//    definitions (hta_breakdown.hpp; docs/metrics.md says where they differ from the above).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/regex.hpp"
#include "ranks/histogram.hpp"
#include "ranks/hta_breakdown.hpp"
#include "ranks/timeline.hpp"

namespace ranks {

// Default iteration markers: PyTorch profiler steps and common hand-written NVTX ranges. This
// regex is their definition; default_iteration_marker() matches exactly the same names without a
// regex engine (tests/test_repro_analysis.cpp checks the two agree).
inline constexpr const char* kDefaultIterationMarker =
    R"(^(ProfilerStep#\d+|[Ii]teration[ _#:]*\d+|[Ss]tep[ _#:]*\d+|train_step.*|training_step.*)$)";
bool default_iteration_marker(std::string_view name);

// Which NVTX range names mark iterations. Names come from untrusted profiles, of any length:
//  * the default markers are matched by plain string code;
//  * a user's regex (--iteration-marker) runs on RE2 (common/regex.hpp), in time linear in the
//    name: a backtracking engine ran for hours on one long name (repro N11).
class IterationMarker {
 public:
  IterationMarker() = default;  // the default markers
  IterationMarker(common::Regex user) : user_(std::move(user)) {}  // implicit: `= common::Regex(...)` works
  bool matches(std::string_view name) const;
  bool is_default() const { return !user_.has_value(); }

 private:
  std::optional<common::Regex> user_;
};

struct MetricsOptions {
  IterationMarker iteration_marker;
  size_t top_kernels = 20;
  int64_t long_gap_ns = 1'000'000;  // gaps longer than this are counted apart (1 ms)
};

enum class IterationSource : uint8_t { None, NvtxMarker, CollectivePeriod };
const char* iteration_source_name(IterationSource s);

// One training iteration on this rank. For NVTX markers: start = marker start (host clock, same
// timebase as the GPU), end = max(marker end, end of the last kernel launched inside the marker).
// For the periodic fallback: from the first NCCL kernel of one period to the first of the next.
struct Iteration {
  int64_t number = 0;  // from the marker name (ProfilerStep#N -> N), else ordinal
  int64_t start = 0, end = 0;
  int64_t step_ns = 0;  // next iteration's start - start (last: end - start)
  bool warmup = false;
};

struct TimeBreakdown {
  int64_t span_ns = 0, busy_ns = 0, compute_ns = 0, nccl_ns = 0, exposed_nccl_ns = 0, idle_ns = 0;
};

struct KernelTotal {
  uint32_t name = kNoName;
  bool nccl = false;
  int64_t count = 0, total_ns = 0, max_ns = 0;
};

struct RankMetrics {
  int64_t gpu_start = 0, gpu_end = 0;        // whole GPU window
  int64_t scope_start = 0, scope_end = 0;    // window of the figures below
  bool steady = false;                       // scope is the steady state
  TimeBreakdown whole, scope;
  int64_t kernel_count = 0, nccl_kernel_count = 0, copy_count = 0;
  int64_t gap_count = 0, long_gap_count = 0, long_gap_ns = 0;  // in scope
  int64_t h2d_bytes = 0, h2d_ns = 0, d2h_bytes = 0, d2h_ns = 0;  // in scope
  int64_t sync_count = 0, sync_ns = 0;                            // in scope
  IterationSource iteration_source = IterationSource::None;
  std::vector<Iteration> iterations;
  common::Distribution step_ms;  // steady-state iterations
  std::vector<KernelTotal> top_kernels;  // whole profile, by total time
  LogHistogram kernel_hist, nccl_hist, gap_hist, sync_hist;  // durations in ns, in scope
  HtaBreakdown hta;  // HTA's own scope: the whole profile but its last ProfilerStep
  std::vector<std::string> warnings;  // what the metrics had to repair (a missing marker), said once per file
};

RankMetrics compute_metrics(const RankTimeline& tl, const MetricsOptions& opt = {});

// Iterations alone (used by compute_metrics; exposed for tests and cross-rank analyses).
// A marker missing between two markers (one ProfilerStep range lost) is repaired from the rank's
// collectives and said in `warnings` when given.
std::vector<Iteration> find_iterations(const RankTimeline& tl, const IterationMarker& marker, IterationSource* source,
                                       std::vector<std::string>* warnings = nullptr);

}  // namespace ranks
