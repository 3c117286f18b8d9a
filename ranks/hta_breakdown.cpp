// HTA's temporal breakdown and comm/comp overlap; definitions and citations in
// include/ranks/hta_breakdown.hpp and docs/metrics.md. Each step follows HTA's pandas code
// literally (including how it merges intervals), so that its quirks are ours too: the goal is
// equal numbers, not better ones (better ones are metrics.hpp's).
#include "ranks/hta_breakdown.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "common/regex.hpp"
#include "ranks/sat_math.hpp"

namespace ranks {
namespace {

// HTA's patterns verbatim (hta/common/types.py). HTA applies them with Python's re.match, which
// anchors at the start of the name only: hence the "^(?:...)" around each. RE2 (linear time) since
// the names come from untrusted profiles; `.` stops at a newline in both engines.
const common::Regex& comm_pattern() {  // CommunicateKernelGroupingPattern
  static const common::Regex re(R"(^(?:(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)))");
  return re;
}
const common::Regex& memory_pattern() {  // MemoryKernelGroupingPattern
  static const common::Regex re(R"(^(?:(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)))");
  return re;
}
const common::Regex& not_compute_pattern() {  // ComputeKernelGroupingPattern (inverse_match=True)
  static const common::Regex re(
      R"(^(?:(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)|(^runFunction))"
      R"(|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)|(^collective_subgraph_execution)))");
  return re;
}

// One GPU event in HTA's time unit (us when rounding, else ns).
struct Event {
  int64_t ts, end;
  HtaKernelType type;
};

// floor and ceil of x / d for d > 0, also for negative x (C++ division truncates toward zero).
int64_t floor_div(int64_t x, int64_t d) { return x / d - ((x % d != 0) && (x < 0)); }
int64_t ceil_div(int64_t x, int64_t d) { return x / d + ((x % d != 0) && (x > 0)); }

bool is_profiler_step(std::string_view name) {  // ProfilerStepGroupingPattern: ^ProfilerStep#(\d+)
  constexpr std::string_view p = "ProfilerStep#";
  return name.size() > p.size() && name.substr(0, p.size()) == p && name[p.size()] >= '0' && name[p.size()] <= '9';
}

// Trace._filter_irrelevant_gpu_kernels (hta/common/trace.py): with at least two distinct
// ProfilerStep names, GPU events whose launching CPU event starts at or after the latest
// ProfilerStep start are dropped. kNoTime when the filter does not apply.
int64_t last_step_cut(const RankTimeline& tl) {
  std::vector<uint32_t> names;
  int64_t last = kNoTime;
  for (size_t i = 0; i < tl.nvtx.size(); ++i) {
    if (!is_profiler_step(tl.names.str(tl.nvtx.name[i]))) continue;
    names.push_back(tl.nvtx.name[i]);
    last = std::max(last, tl.nvtx.start[i]);
  }
  std::sort(names.begin(), names.end());
  return std::unique(names.begin(), names.end()) - names.begin() >= 2 ? last : kNoTime;
}

// HTA's clock: the PyTorch profiler's float microseconds, which round_down_time_stamps
// (trace_parser.py) rounds to whole microseconds, start up and end (ts + dur) down, unless
// HTA_DISABLE_NS_ROUNDING=1. The rounding is on the file's absolute microsecond grid: utc_epoch_ns +
// t is on it (timeline.hpp: the wall clock; a PyTorch trace's base is whole seconds in every file
// seen); for a profile HTA cannot read any grid is as good as another.
struct HtaClock {
  int64_t unit = 1, phase = 0;
  HtaClock(const RankTimeline& tl, const HtaOptions& opt)
      : unit(opt.round_to_us ? 1000 : 1),
        phase(opt.round_to_us ? tl.utc_epoch_ns - floor_div(tl.utc_epoch_ns, 1000) * 1000 : 0) {}
  int64_t up(int64_t t) const { return ceil_div(t + phase, unit); }  // |t| <= 2^61: no overflow
  int64_t down(int64_t t) const { return floor_div(t + phase, unit); }
};

// Whether HTA keeps each copy. HTA keeps a GPU event when the CPU call that launched it started
// before the cut; copies carry no launch time here, so it is inferred from stream order (a stream
// runs its work in the order it was issued): a copy followed on its stream by a kernel launched
// before the cut was launched before it too; one preceded by a kernel launched at or after the cut
// was launched after. In between, its start decides (it starts after its launch). Judging copies
// by their start alone dropped 190 copies HTA keeps on a real trace whose CPU ran a step ahead.
template <class Kept>
std::vector<uint8_t> copies_kept(const RankTimeline& tl, Kept kept) {
  const auto& k = tl.kernels;
  const auto& c = tl.copies;
  std::unordered_map<int32_t, std::vector<std::pair<int64_t, bool>>> by_stream;  // (start, kept), by start
  for (size_t i = 0; i < k.size(); ++i)
    by_stream[k.stream[i]].push_back({k.start[i], kept(k.launch[i] != kNoTime ? k.launch[i] : k.start[i])});
  std::vector<uint8_t> out(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    const auto it = by_stream.find(c.stream[i]);
    out[i] = kept(c.start[i]);
    if (it == by_stream.end()) continue;
    const auto& v = it->second;
    const auto next = std::lower_bound(v.begin(), v.end(), std::make_pair(c.start[i], false));
    if (next != v.end() && next->second) out[i] = 1;
    else if (next != v.begin() && !std::prev(next)->second) out[i] = 0;
  }
  return out;
}

// The events HTA's get_temporal_breakdown sees (trace_df["stream"].ne(-1)): kernels and
// memcpy/memset, in HTA's unit, sorted by start (merge_kernel_intervals sorts by "ts"; among equal
// starts pandas' order is unspecified, ours is by end).
std::vector<Event> gpu_events(const RankTimeline& tl, const HtaClock& clock, int64_t cut) {
  // HTA compares rounded times too: a launch is kept when its ts is below the step's, both ceiled.
  const int64_t cut_at = cut == kNoTime ? 0 : clock.up(cut);
  auto kept = [&](int64_t launched) { return cut == kNoTime || clock.up(launched) < cut_at; };
  std::vector<Event> out;
  out.reserve(tl.kernels.size() + tl.copies.size());
  std::vector<int8_t> type_of(tl.names.size(), -1);  // per interned name: the regexes run once each
  const auto& k = tl.kernels;
  for (size_t i = 0; i < k.size(); ++i) {
    // A kernel without a known launch is judged by its start (it starts after its launch).
    if (!kept(k.launch[i] != kNoTime ? k.launch[i] : k.start[i])) continue;
    int8_t& t = type_of[k.name[i]];
    if (t < 0) t = int8_t(hta_kernel_type(tl.names.str(k.name[i])));
    out.push_back({clock.up(k.start[i]), clock.down(k.end[i]), HtaKernelType(t)});
  }
  // The PyTorch profiler names copies "Memcpy ..." and "Memset ...", which HTA's memory pattern matches.
  const auto& c = tl.copies;
  const std::vector<uint8_t> copy_kept = cut == kNoTime ? std::vector<uint8_t>(c.size(), 1) : copies_kept(tl, kept);
  for (size_t i = 0; i < c.size(); ++i)
    if (copy_kept[i]) out.push_back({clock.up(c.start[i]), clock.down(c.end[i]), HtaKernelType::Memory});
  std::sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.end < b.end;
  });
  return out;
}

struct Group {
  int64_t ts, end;
};

// merge_kernel_intervals (hta/utils/utils.py): a row opens a new group when its start is after
// the running maximum of all earlier ends (touching intervals merge); a group spans its minimum
// start to its maximum end. Literal, so that an event HTA's rounding left with end < start
// (sub-microsecond) weighs what it weighs there.
template <class Keep>
std::vector<Group> merge_intervals(const std::vector<Event>& ev, Keep keep) {
  std::vector<Group> out;
  int64_t cummax = 0;  // end.shift().cummax(): the maximum end of all earlier rows, not the group's
  for (const Event& e : ev) {
    if (!keep(e)) continue;
    const bool first = out.empty();
    if (first || e.ts > cummax) out.push_back({e.ts, e.end});
    else out.back().end = std::max(out.back().end, e.end);
    cummax = first ? e.end : std::max(cummax, e.end);
  }
  return out;
}

int64_t total(const std::vector<Group>& g) {  // merged.end.sum() - merged.ts.sum()
  int64_t s = 0;
  for (const auto& x : g) s = sat_add(s, sat_sub(x.end, x.ts));
  return s;
}

// get_comm_comp_overlap's sweep: +1/-1 at communication group ends, +2/-2 at computation ones;
// where the running sum is 3 both run, until the next row's time.
int64_t overlap_time(const std::vector<Group>& comm, const std::vector<Group>& comp) {
  std::vector<std::pair<int64_t, int>> rows;
  for (const auto& g : comm) rows.push_back({g.ts, 1}), rows.push_back({g.end, -1});
  for (const auto& g : comp) rows.push_back({g.ts, 2}), rows.push_back({g.end, -2});
  std::sort(rows.begin(), rows.end());  // by time (the order of equal times adds nothing)
  int64_t running = 0, overlap = 0;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    running += rows[i].second;
    if (running == 3) overlap = sat_add(overlap, sat_sub(rows[i + 1].first, rows[i].first));
  }
  return overlap;
}

double percent(int64_t part, int64_t whole) {  // HTA: round(100 * (part / whole), 2), unrounded here
  return whole != 0 ? 100.0 * (double(part) / double(whole)) : HtaBreakdown::kNaN;
}

}  // namespace

HtaKernelType hta_kernel_type(std::string_view name) {
  if (comm_pattern().search(name)) return HtaKernelType::Communication;
  if (memory_pattern().search(name)) return HtaKernelType::Memory;
  if (!not_compute_pattern().search(name)) return HtaKernelType::Computation;
  return HtaKernelType::Other;
}

HtaBreakdown hta_breakdown(const RankTimeline& tl, const HtaOptions& opt) {
  HtaBreakdown b;
  b.cut = opt.include_last_profiler_step ? kNoTime : last_step_cut(tl);
  const HtaClock clock(tl, opt);
  const std::vector<Event> ev = gpu_events(tl, clock, b.cut);
  b.events = int64_t(ev.size());
  if (ev.empty()) return b;  // HTA fails here (merged_kernels.iloc[-1] of nothing)
  auto is = [](HtaKernelType t) { return [t](const Event& e) { return e.type == t; }; };
  // _get_idle_time_for_kernels: the span of the merged groups and what they leave uncovered.
  const std::vector<Group> all = merge_intervals(ev, [](const Event&) { return true; });
  const int64_t span = sat_sub(all.back().end, all.front().ts);
  const int64_t idle = sat_sub(span, total(all));
  const std::vector<Group> comp = merge_intervals(ev, is(HtaKernelType::Computation));
  const std::vector<Group> comm = merge_intervals(ev, is(HtaKernelType::Communication));
  const int64_t compute = total(comp);
  const int64_t non_compute = sat_sub(sat_sub(span, compute), idle);
  const int64_t comm_time = total(comm), overlap = overlap_time(comm, comp);

  const int64_t unit = clock.unit;
  b.kernel_span_ns = sat_mul(span, unit), b.idle_ns = sat_mul(idle, unit);
  b.compute_ns = sat_mul(compute, unit), b.non_compute_ns = sat_mul(non_compute, unit);
  b.comm_ns = sat_mul(comm_time, unit), b.overlap_ns = sat_mul(overlap, unit);
  b.idle_pct = percent(idle, span), b.compute_pct = percent(compute, span);
  b.non_compute_pct = percent(non_compute, span);
  b.comm_overlap_pct = percent(overlap, comm_time);
  return b;
}

}  // namespace ranks
