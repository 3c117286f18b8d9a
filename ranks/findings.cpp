// Per-rank root-cause findings; the signatures are defined in include/ranks/findings.hpp.
// Two passes over the start-sorted columns (GPU gaps; kernels in scope) and one over the API calls.
#include "ranks/findings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "common/stats.hpp"
#include "common/text.hpp"
#include "ranks/intervals.hpp"

namespace ranks {
namespace {

constexpr const char* kNames[kFindingCount] = {"gpu_bubbles",   "cpu_bottleneck", "nccl_serialization", "excessive_h2d",
                                               "small_kernels", "kernel_hotspot", "gc_pause",           "comm_imbalance",
                                               "module_loading", "excessive_sync"};

enum class GapCause : uint8_t { AfterSync, NoLaunch, Queued, Unknown };

struct Gap {
  int64_t a = 0, b = 0;
  GapCause cause = GapCause::Unknown;
  bool at_start = false;
  bool loading = false;  // mostly while device code was compiled or loaded (module_loading claims it)
  double load_ns = 0;    // the part while device code was compiled or loaded (module_loading's)
  int64_t len() const { return b - a; }
  double free_ns() const { return double(len()) - load_ns; }  // what other findings may cost
};

double ms(double ns) { return ns / 1e6; }

// What the findings share: the scope, its steps, the syncs and the GPU gaps.
struct Facts {
  int64_t lo = 0, hi = 0;       // scope
  double scope_ns = 0, steps = 1, median_step_ns = 0;
  bool marked_steps = false;    // steps come from step markers
  bool first = false;           // a warm-up iteration [first_lo, first_hi) before steady ones
  int64_t first_lo = 0, first_hi = 0;
  std::vector<int64_t> iteration_starts, sync_ends;
  int64_t sync_count = 0;       // in scope (the metrics' count)
  double sync_ns = 0;
  std::vector<Gap> long_gaps;   // in scope, >= long_gap_ns
  double after_sync_idle_ns = 0, idle_ns = 0;
  int64_t steady_max_gap = 0, first_max_gap = 0;
  double first_idle_ns = 0, first_step_ns = 0;
  std::vector<std::pair<int64_t, int64_t>> loads;  // module loads and compile ranges, merged, by start
  double load_idle_ns = 0, load_idle_scope_ns = 0;  // GPU idle while loading: whole capture, in scope
  int64_t load_calls = 0, compile_ranges = 0;
  double load_ns = 0;  // the merged intervals' length
  double costed_idle_ns = 0;  // scope idle already costed by a finding (idle is costed once)
  double costed_load_ns = 0;  // of which module_loading's one-time stall
};

struct StreamTime {
  int32_t stream = 0;
  double compute_ns = 0, nccl_ns = 0;
};

struct KernelFacts {
  std::vector<StreamTime> streams;  // a few: searched linearly, last hit first
  std::vector<double> by_name;      // compute ns by name id (ids are dense)
  double compute_ns = 0;
  int64_t nccl_count = 0, with_launch = 0, just_in_time = 0;
  struct Nccl {
    int32_t stream;
    uint32_t name;
    double ns;
  };
  std::vector<Nccl> nccl;  // NCCL kernels in scope
  int64_t small = 0;
  double small_ns = 0, small_launch_ns = 0, small_idle_ns = 0;
};

// Names of host ranges that compile device code (NVRTC, torch.compile / inductor, nvFuser, Triton
// autotuning), any case.
bool compile_range(std::string_view name) {
  std::string low(name.substr(0, 256));
  for (char& c : low) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : {"nvrtc", "compile", "jit", "autotun"})
    if (low.find(w) != std::string::npos) return true;
  return false;
}

// Module-load calls and compile ranges, merged into disjoint intervals (they nest).
void load_intervals(const RankTimeline& tl, Facts& f) {
  std::vector<std::pair<int64_t, int64_t>> v;
  const auto& a = tl.api;
  for (size_t i = 0; i < a.size(); ++i)
    if (a.kind[i] == ApiKind::ModuleLoad)
      v.push_back({a.start[i], a.end[i]}), f.load_calls++;
  std::vector<int8_t> is_compile(tl.names.size(), -1);
  const auto& n = tl.nvtx;
  for (size_t i = 0; i < n.size(); ++i) {
    if (n.name[i] >= is_compile.size()) continue;
    int8_t& c = is_compile[n.name[i]];
    if (c < 0) c = compile_range(tl.names.str(n.name[i])) ? 1 : 0;
    if (c) v.push_back({n.start[i], n.end[i]}), f.compile_ranges++;
  }
  std::sort(v.begin(), v.end());
  for (const auto& [s, e] : v)
    if (!f.loads.empty() && s <= f.loads.back().second) f.loads.back().second = std::max(f.loads.back().second, e);
    else f.loads.push_back({s, e});
  for (const auto& [s, e] : f.loads) f.load_ns += double(e - s);
}

Facts scope_facts(const RankTimeline& tl, const RankMetrics& m) {
  Facts f;
  f.lo = m.scope_start, f.hi = m.scope_end;
  f.scope_ns = double(std::max<int64_t>(0, f.hi - f.lo));
  for (const auto& it : m.iterations) f.iteration_starts.push_back(it.start);
  std::sort(f.iteration_starts.begin(), f.iteration_starts.end());
  // The steady steps (metrics: every iteration but the warm-up, when there are two or more).
  f.steps = std::max<double>(1, double(m.step_ms.count));
  f.median_step_ns = m.step_ms.count ? m.step_ms.p50 * 1e6 : f.scope_ns;
  f.marked_steps = m.iteration_source == IterationSource::NvtxMarker && m.steady;
  if (m.iterations.size() >= 2) {
    // A marked warm-up starts at its marker; a collective-period unit at its first collective, but
    // the warm-up work before that collective (a DP-only step's whole forward and backward) belongs
    // to it: from the first GPU activity.
    f.first = true, f.first_lo = m.iterations[0].start, f.first_hi = m.iterations[1].start;
    if (m.iteration_source == IterationSource::CollectivePeriod) f.first_lo = std::min(f.first_lo, m.gpu_start);
    f.first_step_ns = double(f.first_hi - f.first_lo);
  }
  f.sync_count = m.sync_count, f.sync_ns = double(m.sync_ns);
  const auto& a = tl.api;
  for (size_t i = 0; i < a.size(); ++i)
    if (a.kind[i] == ApiKind::Sync || a.kind[i] == ApiKind::Memcpy) f.sync_ends.push_back(a.end[i]);
  std::sort(f.sync_ends.begin(), f.sync_ends.end());
  load_intervals(tl, f);
  return f;
}

bool any_in(const std::vector<int64_t>& sorted, int64_t a, int64_t b) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), a);
  return it != sorted.end() && *it <= b;
}

// The GPU gaps: holes in the union of kernels and copies (merged by start), with their causes.
void gap_pass(const RankTimeline& tl, const FindingOptions& o, Facts& f) {
  const auto& k = tl.kernels;
  const int64_t tol = int64_t(o.iteration_edge * f.median_step_ns);
  auto hole = [&](int64_t a, int64_t b) {
    const double loading = f.loads.empty() ? 0 : covered(f.loads, a, b);
    f.load_idle_ns += loading;
    if (f.first) {
      const int64_t ov = std::max<int64_t>(0, std::min(b, f.first_hi) - std::max(a, f.first_lo));
      f.first_idle_ns += double(ov), f.first_max_gap = std::max(f.first_max_gap, ov);
    }
    a = std::max(a, f.lo), b = std::min(b, f.hi);
    if (b <= a) return;
    Gap g{a, b, GapCause::Unknown, false};
    g.load_ns = loading > 0 ? covered(f.loads, a, b) : 0;
    g.loading = g.load_ns >= 0.5 * double(g.len());
    f.load_idle_scope_ns += g.load_ns;
    f.idle_ns += double(g.len());
    f.steady_max_gap = std::max(f.steady_max_gap, g.len());
    if (any_in(f.sync_ends, a, b)) {
      g.cause = GapCause::AfterSync;
      f.after_sync_idle_ns += double(g.len());
    }
    if (g.len() < o.long_gap_ns) return;
    if (g.cause != GapCause::AfterSync) {
      const size_t j = size_t(std::lower_bound(k.start.begin(), k.start.end(), b) - k.start.begin());
      if (j < k.size() && k.launch[j] != kNoTime) g.cause = k.launch[j] > a ? GapCause::NoLaunch : GapCause::Queued;
    }
    g.at_start = any_in(f.iteration_starts, a - tol, b + tol);
    f.long_gaps.push_back(g);
  };
  int64_t prev_end = INT64_MIN;
  activity_union(tl, [&](int64_t s, int64_t e) {
    if (prev_end != INT64_MIN) hole(prev_end, s);
    prev_end = e;
  });
}

KernelFacts kernel_pass(const RankTimeline& tl, const Facts& f, const FindingOptions& o) {
  const auto& k = tl.kernels;
  KernelFacts kf;
  kf.by_name.assign(tl.names.size(), 0.0);
  size_t last = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    if (k.start[i] < f.lo || k.start[i] >= f.hi) continue;
    const double d = double(k.end[i] - k.start[i]);
    if (last >= kf.streams.size() || kf.streams[last].stream != k.stream[i]) {
      last = size_t(std::find_if(kf.streams.begin(), kf.streams.end(), [&](auto& s) { return s.stream == k.stream[i]; }) -
                    kf.streams.begin());
      if (last == kf.streams.size()) kf.streams.push_back({k.stream[i], 0, 0});
    }
    StreamTime& st = kf.streams[last];
    if (k.is_nccl[i]) {
      st.nccl_ns += d, kf.nccl_count++;
      kf.nccl.push_back({k.stream[i], k.name[i], d});
      continue;
    }
    st.compute_ns += d, kf.compute_ns += d;
    if (k.name[i] < kf.by_name.size()) kf.by_name[k.name[i]] += d;
    if (k.launch[i] != kNoTime) {
      kf.with_launch++;
      if (double(k.start[i]) - double(k.launch[i]) - double(k.launch_dur[i]) <= o.jit_slack_ns) kf.just_in_time++;
    }
    if (k.end[i] - k.start[i] < o.small_kernel_ns) {
      kf.small++, kf.small_ns += d, kf.small_launch_ns += double(k.launch_dur[i]);
      if (i + 1 < k.size()) {  // idle while the host is still launching the next kernel
        const int64_t idle = k.start[i + 1] - k.end[i];
        const bool host_late = k.launch[i + 1] == kNoTime || k.launch[i + 1] + int64_t(k.launch_dur[i + 1]) > k.end[i];
        if (idle > 0 && idle < o.long_gap_ns && host_late) kf.small_idle_ns += double(idle);
      }
    }
  }
  return kf;
}

// H2D copy time in scope that no kernel overlaps, and the time in scope some kernel runs.
std::pair<double, double> exposed_h2d_and_sm_busy(const RankTimeline& tl, const Facts& f) {
  std::vector<std::pair<int64_t, int64_t>> busy;  // kernel union
  union_of(tl.kernels.start, tl.kernels.end, [](size_t) { return true; }, [&](int64_t s, int64_t e) { busy.push_back({s, e}); });
  const auto& c = tl.copies;
  double exposed = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.kind[i] != CopyKind::HtoD || c.start[i] < f.lo || c.start[i] >= f.hi) continue;
    exposed += double(c.end[i] - c.start[i]) - covered(busy, c.start[i], c.end[i]);
  }
  return {exposed, covered(busy, f.lo, f.hi)};
}

struct Out {
  std::vector<RankFinding>& v;
  const Facts& f;
  void add(Finding what, double severity, double cost_ns, std::string evidence) {
    v.push_back({-1, what, severity, ms(cost_ns) / f.steps, std::move(evidence), unit()});
  }
  std::string unit() const { return f.marked_steps ? "step" : f.steps > 1 ? "repeating unit" : "window"; }
  std::string per_step() const { return "per " + unit(); }
  double pct(double ns) const { return f.scope_ns > 0 ? 100.0 * ns / f.scope_ns : 0; }
};

// Whether the pauses come once per iteration in nearly every iteration they span: a collection
// every step at a point that moves within the step (allocations that vary a little) is as periodic
// as its intervals are not.
bool once_per_iteration(const Facts& f, const std::vector<size_t>& cand, double share) {
  const auto& st = f.iteration_starts;
  if (st.size() < 2) return false;
  std::map<size_t, int> per;  // iteration index -> pauses in it
  for (size_t q : cand) {
    const auto it = std::upper_bound(st.begin(), st.end(), f.long_gaps[q].a);
    if (it != st.begin()) per[size_t(it - st.begin()) - 1]++;
  }
  if (per.empty()) return false;
  const size_t spanned = per.rbegin()->first - per.begin()->first + 1;
  size_t once = 0;
  for (const auto& e : per) once += e.second == 1;
  return double(once) >= share * double(spanned);
}

// gc_pause: the long host-late gaps, away from iteration starts, that repeat with a regular period
// (or once per iteration).
// The largest group of gaps whose lengths agree within `spread` (a band of spread around its
// centre): a collector's pauses are alike, while the odd 1-3 ms bubble beside them is another
// thing and must neither veto them nor be costed as one. In start order.
std::vector<size_t> alike_lengths(const std::vector<Gap>& gaps, const std::vector<size_t>& idx, double spread) {
  std::vector<size_t> by_len = idx;
  std::sort(by_len.begin(), by_len.end(), [&](size_t a, size_t b) { return gaps[a].len() < gaps[b].len(); });
  size_t best_lo = 0, best_n = 0;
  for (size_t lo = 0, hi = 0; lo < by_len.size(); ++lo) {  // window [lo, hi): lengths within spread
    hi = std::max(hi, lo);
    while (hi < by_len.size() && double(gaps[by_len[hi]].len()) <= spread * double(gaps[by_len[lo]].len())) ++hi;
    if (hi - lo >= best_n) best_n = hi - lo, best_lo = lo;  // ties: the longer group
  }
  std::vector<size_t> out(by_len.begin() + long(best_lo), by_len.begin() + long(best_lo + best_n));
  std::sort(out.begin(), out.end());
  return out;
}

// Whether the intervals scatter little around their mean (coefficient of variation <= max_cv): a
// collector triggered by allocation counts lands at a point that moves within the step, so single
// intervals stray past the tolerance (94 and 136 ms around 117) while chance bubbles, spaced at
// random, scatter as much as their mean.
bool steady_intervals(const std::vector<double>& intervals, double max_cv) {
  if (intervals.size() < 2) return false;
  double mean = 0, var = 0;
  for (double d : intervals) mean += d / double(intervals.size());
  for (double d : intervals) var += (d - mean) * (d - mean) / double(intervals.size() - 1);
  return mean > 0 && std::sqrt(var) <= max_cv * mean;
}

std::vector<bool> gc_pauses(Facts& f, const FindingOptions& o, Out& out) {
  std::vector<bool> claimed(f.long_gaps.size(), false);
  std::vector<size_t> cand;
  // A collector stops the host: the GPU idles with nothing queued. A gap whose next kernel was
  // launched before it began (queued, waiting on a dependency) is no host stall.
  for (size_t i = 0; i < f.long_gaps.size(); ++i)
    if (f.long_gaps[i].cause != GapCause::AfterSync && f.long_gaps[i].cause != GapCause::Queued && !f.long_gaps[i].loading)
      cand.push_back(i);
  cand = alike_lengths(f.long_gaps, cand, o.gc_length_spread);
  if (int(cand.size()) < o.gc_min_pauses) return claimed;
  size_t at_start = 0;
  std::vector<double> lens, intervals;
  for (size_t q = 0; q < cand.size(); ++q) {
    const Gap& g = f.long_gaps[cand[q]];
    at_start += g.at_start;
    lens.push_back(double(g.len()));
    if (q) intervals.push_back(double(g.a - f.long_gaps[cand[q - 1]].a));
  }
  if (double(at_start) > o.gc_max_at_start * double(cand.size())) return claimed;
  const double period = common::median(intervals), len = common::median(lens);
  size_t regular = 0;
  for (double d : intervals) regular += std::abs(d - period) <= o.gc_period_tolerance * period;
  if (double(regular) < o.gc_regular_share * double(intervals.size()) && !once_per_iteration(f, cand, o.gc_regular_share) &&
      !steady_intervals(intervals, o.gc_max_interval_cv))
    return claimed;
  double total = 0;
  for (size_t q : cand) claimed[q] = true, total += f.long_gaps[q].free_ns();
  f.costed_idle_ns += total;
  const double every = f.median_step_ns > 0 ? period / f.median_step_ns : 0;
  out.add(Finding::GcPause, double(cand.size()) / o.gc_min_pauses, total,
          fmt::format("{} periodic host stalls of {:.1f} ms (GPU idle) every {:.1f} ms (~{:.1f} iterations), {} of them at an "
                      "iteration start: typical of Python garbage collection",
                      cand.size(), ms(len), ms(period), every, at_start));
  return claimed;
}

void sync_and_bubbles(Facts& f, const KernelFacts& kf, const FindingOptions& o, Out& out) {
  const std::vector<bool> gc = gc_pauses(f, o, out);
  const double per_step = double(f.sync_count) / f.steps;
  const double nccl_per_sync = f.sync_count ? double(kf.nccl_count) / double(f.sync_count) : 1e300;
  const double blocked = f.scope_ns > 0 ? f.sync_ns / f.scope_ns : 0;
  // Marked steps: syncs per step. A collective-period unit may be a few layers, or several steps
  // (a periodic stall every 3 steps makes 3 the unit), so without markers: syncs per collective.
  const bool frequent = f.marked_steps ? per_step >= o.sync_per_step
                                       : kf.nccl_count > 0 && nccl_per_sync <= o.sync_nccl_per_sync;
  const bool sync = blocked >= o.sync_blocked_share && frequent && f.sync_count >= 2;
  if (sync) {
    f.costed_idle_ns += f.after_sync_idle_ns;
    const double sev = blocked / o.sync_blocked_share;
    out.add(Finding::ExcessiveSync, sev, f.after_sync_idle_ns,
            fmt::format("{:.1f} synchronize calls {} ({}), the host blocked in them {:.1f}% of the time; GPU idle after "
                        "them {:.2f} ms {}",
                        per_step, out.per_step(),
                        f.marked_steps ? "more than the one per step a training loop needs"
                                       : fmt::format("one every {:.1f} NCCL kernels", nccl_per_sync),
                        100 * blocked, ms(f.after_sync_idle_ns) / f.steps, out.per_step()));
  }
  double total = 0, longest = 0;
  int64_t n = 0, causes[4] = {};
  for (size_t i = 0; i < f.long_gaps.size(); ++i) {
    const Gap& g = f.long_gaps[i];
    if (gc[i] || g.loading || (sync && g.cause == GapCause::AfterSync)) continue;
    n++, total += g.free_ns(), longest = std::max(longest, double(g.len()));
    causes[int(g.cause)]++;
  }
  if (f.scope_ns > 0 && total >= o.bubble_share * f.scope_ns) {
    f.costed_idle_ns += total;
    out.add(Finding::GpuBubbles, total / (o.bubble_share * f.scope_ns), total,
            fmt::format("{} GPU idle gaps >= {:.0f} ms, {:.2f} ms {} ({:.1f}% of the time), longest {:.1f} ms; no launch "
                        "queued: {}, after a sync: {}, launched but waiting: {}, launch unknown: {}",
                        n, ms(double(o.long_gap_ns)), ms(total) / f.steps, out.per_step(), out.pct(total), ms(longest),
                        causes[int(GapCause::NoLaunch)], causes[int(GapCause::AfterSync)], causes[int(GapCause::Queued)],
                        causes[int(GapCause::Unknown)]));
  }
}

// nccl_serialization (findings.hpp): NCCL's transfer part on streams that also compute.
void nccl_serialization(const RankMetrics& m, const Facts& f, const KernelFacts& kf, const FindingOptions& o, Out& out) {
  const double nccl = double(m.scope.nccl_ns);
  if (f.scope_ns <= 0 || nccl < o.nccl_flag_share * f.scope_ns) return;
  std::vector<int32_t> serial_streams;
  for (const auto& s : kf.streams)
    if (s.nccl_ns > 0 && s.compute_ns > 0 && s.compute_ns >= o.nccl_stream_compute_share * kf.compute_ns)
      serial_streams.push_back(s.stream);
  if (serial_streams.empty()) return;
  std::map<uint32_t, std::vector<double>> by_name;  // durations per NCCL kernel name
  for (const auto& n : kf.nccl) by_name[n.name].push_back(n.ns);
  std::map<uint32_t, double> transfer;  // lower quartile: the duration without waiting
  for (auto& [name, d] : by_name) {
    std::sort(d.begin(), d.end());
    transfer[name] = d[d.size() / 4];
  }
  double serial = 0, serial_all = 0;
  for (const auto& n : kf.nccl)
    if (std::count(serial_streams.begin(), serial_streams.end(), n.stream))
      serial += std::min(n.ns, transfer[n.name]), serial_all += n.ns;
  const double cost = std::min(serial, kf.compute_ns);
  if (cost < o.nccl_serial_share * f.scope_ns) return;
  out.add(Finding::NcclSerialization, cost / (o.nccl_serial_share * f.scope_ns), cost,
          fmt::format("NCCL kernels run on a compute stream: {:.2f} ms {} ({:.1f}% of the time, {:.0f}% of its NCCL time) "
                      "cannot overlap compute; NCCL {:.1f}% of the time; overlap could save their transfer part, "
                      "{:.2f} ms {} (waiting for peers excluded)",
                      ms(serial_all) / f.steps, out.per_step(), out.pct(serial_all), 100 * std::min(1.0, serial_all / nccl),
                      out.pct(nccl), ms(cost) / f.steps, out.per_step()));
}

void small_kernels(const Facts& f, const KernelFacts& kf, const FindingOptions& o, Out& out) {
  const double at_stake = kf.small_ns + kf.small_idle_ns;
  // Per unit of the job's time: a one-time compilation stall costed by module_loading is not it.
  const double time = f.scope_ns - f.costed_load_ns;
  if (time <= 0 || double(kf.small) < o.small_min_count || kf.small_launch_ns <= kf.small_ns ||
      at_stake < o.small_share * time)
    return;
  out.add(Finding::SmallKernels, at_stake / (o.small_share * time), at_stake,
          fmt::format("{:.0f} kernels under {:.0f} us {} (mean {:.1f} us) whose launch calls take {:.1f} us each; time at "
                      "stake {:.2f} ms {} ({:.1f}% of the time): GPU time in them {:.2f} ms, idle after them while the host "
                      "launched the next {:.2f} ms",
                      double(kf.small) / f.steps, double(o.small_kernel_ns) / 1e3, out.per_step(),
                      kf.small_ns / double(kf.small) / 1e3, kf.small_launch_ns / double(kf.small) / 1e3,
                      ms(at_stake) / f.steps, out.per_step(), out.pct(at_stake), ms(kf.small_ns) / f.steps,
                      ms(kf.small_idle_ns) / f.steps));
}

void gpu_findings(const RankTimeline& tl, const RankMetrics& m, Facts& f, const KernelFacts& kf,
                  const FindingOptions& o, Out& out) {
  small_kernels(f, kf, o, out);
  const bool small = !out.v.empty() && out.v.back().finding == Finding::SmallKernels;
  if (small) f.costed_idle_ns += kf.small_idle_ns;
  const double busy = f.scope_ns > 0 ? double(m.scope.busy_ns) / f.scope_ns : 1;
  const double jit = kf.with_launch ? double(kf.just_in_time) / double(kf.with_launch) : 0;
  const double left = std::max(0.0, f.idle_ns - f.costed_idle_ns);  // idle no other finding costs
  if (double(kf.with_launch) >= o.cpu_min_kernels && busy < o.busy_max && jit >= o.jit_share &&
      left >= o.cpu_min_share * f.scope_ns)
    out.add(Finding::CpuBottleneck, jit / o.jit_share, left,
            fmt::format("GPU busy {:.1f}% of the time, {:.0f}% of its kernels start within {:.0f} us of their launch call "
                        "(launches arrive just in time); GPU idle {:.2f} ms {} ({:.2f} ms not costed by another finding)",
                        100 * busy, 100 * jit, o.jit_slack_ns / 1e3, ms(f.idle_ns) / f.steps, out.per_step(),
                        ms(left) / f.steps));
  nccl_serialization(m, f, kf, o, out);
  const double h2d = double(m.h2d_ns);
  if (f.scope_ns > 0 && h2d >= o.h2d_share * f.scope_ns) {
    const auto [exposed, sm_busy] = exposed_h2d_and_sm_busy(tl, f);
    out.add(Finding::ExcessiveH2D, h2d / (o.h2d_share * f.scope_ns), exposed,
            fmt::format("host-to-device copies {:.1f}% of the time ({:.2f} ms {}, {:.1f} MB at {:.1f} GB/s), {:.2f} ms {} "
                        "not overlapped by kernels; SM idle (no kernel running) {:.1f}% of the time, kernels {:.1f}%",
                        out.pct(h2d), ms(h2d) / f.steps, out.per_step(), double(m.h2d_bytes) / 1e6,
                        h2d > 0 ? double(m.h2d_bytes) / h2d : 0, ms(exposed) / f.steps, out.per_step(),
                        100 - out.pct(sm_busy), out.pct(double(m.scope.compute_ns + m.scope.nccl_ns))));
  }
  uint32_t top = kNoName;
  double top_ns = 0;
  for (uint32_t name = 0; name < kf.by_name.size(); ++name)
    if (const double ns = kf.by_name[name]; ns > top_ns) top = name, top_ns = ns;  // ties: the first interned
  if (top != kNoName && kf.compute_ns >= o.hotspot_min_compute * f.scope_ns && top_ns > o.hotspot_share * kf.compute_ns)
    out.add(Finding::KernelHotspot, top_ns / kf.compute_ns / o.hotspot_share, 0,
            fmt::format("{} takes {:.1f}% of the compute kernel time ({:.2f} ms {}): a place to look, not a saving",
                        common::clip(common::printable(tl.names.str(top)), 80), 100 * top_ns / kf.compute_ns,
                        ms(top_ns) / f.steps, out.per_step()));
}

void module_loading(Facts& f, const FindingOptions& o, Out& out) {
  // From the export's own evidence: GPU idle while device code was compiled or loaded.
  const double span = std::max(f.scope_ns, f.first ? double(f.hi - f.first_lo) : 0.0);
  if (f.load_idle_ns >= double(o.load_min_ns) && f.load_idle_ns >= o.load_share * span) {
    f.costed_idle_ns += f.load_idle_scope_ns, f.costed_load_ns = f.load_idle_scope_ns;
    out.add(Finding::ModuleLoading, f.load_idle_ns / std::max(double(o.load_min_ns), o.load_share * span), f.load_idle_ns,
            fmt::format("GPU idle {:.1f} ms while device code was compiled or loaded, once ({:.1f} ms of compiling or "
                        "loading: {} compile range{}, NVRTC, torch.compile or autotuning, and {} module-load call{})",
                        ms(f.load_idle_ns), ms(f.load_ns), f.compile_ranges, f.compile_ranges == 1 ? "" : "s",
                        f.load_calls, f.load_calls == 1 ? "" : "s"));
    return;
  }
  if (f.first_step_ns <= 0 || f.median_step_ns <= 0) return;
  const double excess = f.first_idle_ns - f.idle_ns / f.steps;
  const double longest_steady = double(std::max(f.steady_max_gap, o.long_gap_ns));
  if (excess < o.compile_idle_steps * f.median_step_ns || double(f.first_max_gap) < o.compile_gap_ratio * longest_steady)
    return;
  out.add(Finding::ModuleLoading, excess / (o.compile_idle_steps * f.median_step_ns), excess,
          fmt::format("first iteration {:.1f} ms = {:.1f}x the steady {:.1f} ms step, {:.1f} ms more GPU idle than a steady "
                      "one in gaps up to {:.1f} ms (longest steady gap {:.2f} ms): a one-time host stall (imports, JIT "
                      "compilation, autotuning), not repeated",
                      ms(f.first_step_ns), f.first_step_ns / f.median_step_ns, ms(f.median_step_ns), ms(excess),
                      ms(double(f.first_max_gap)), ms(double(f.steady_max_gap))));
}

}  // namespace

const char* finding_name(Finding f) { return f == Finding::None ? "" : kNames[int(f)]; }

std::optional<Finding> finding_from_name(std::string_view name) {
  for (int i = 0; i < kFindingCount; ++i)
    if (name == kNames[i]) return Finding(i);
  return std::nullopt;
}

bool host_side(Finding f) {
  switch (f) {
    case Finding::GpuBubbles: case Finding::CpuBottleneck: case Finding::GcPause: case Finding::ModuleLoading:
    case Finding::ExcessiveSync: case Finding::SmallKernels: case Finding::ExcessiveH2D: return true;
    default: return false;
  }
}

std::vector<RankFinding> find_rank_findings(const RankTimeline& tl, const RankMetrics& m, const FindingOptions& o) {
  std::vector<RankFinding> v;
  Facts f = scope_facts(tl, m);
  gap_pass(tl, o, f);
  const KernelFacts kf = kernel_pass(tl, f, o);
  Out out{v, f};
  module_loading(f, o, out);  // idle is costed once: the one-time stall, pauses, syncs, bubbles first
  sync_and_bubbles(f, kf, o, out);
  gpu_findings(tl, m, f, kf, o, out);
  std::sort(v.begin(), v.end(), [](const RankFinding& a, const RankFinding& b) { return a.finding < b.finding; });
  return v;
}

}  // namespace ranks
