// Per-rank metrics; definitions in include/ranks/metrics.hpp.
// Interval unions are computed streaming over the start-sorted columns: no copies of the events.
// Sums saturate (sat_math.hpp): in-contract times are within 2^61 of 0, but a sum over millions of
// rows, or over intervals of an unsorted column, is not.
#include "ranks/metrics.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "ranks/intervals.hpp"
#include "ranks/sat_math.hpp"

namespace ranks {
namespace {

struct Span {
  int64_t lo, hi;
  int64_t overlap(int64_t s, int64_t e) const { return std::max<int64_t>(0, sat_sub(std::min(e, hi), std::max(s, lo))); }
};

void add_busy_and_gaps(const RankTimeline& tl, const MetricsOptions& opt, const Span& whole, const Span& scope,
                       RankMetrics& m) {
  // Busy time and idle gaps.
  int64_t prev_end = INT64_MIN;
  activity_union(tl, [&](int64_t s, int64_t e) {
    m.whole.busy_ns = sat_add(m.whole.busy_ns, whole.overlap(s, e));
    m.scope.busy_ns = sat_add(m.scope.busy_ns, scope.overlap(s, e));
    if (prev_end != INT64_MIN) {
      const int64_t gap = scope.overlap(prev_end, s);
      if (gap > 0) {
        m.gap_count++;
        m.gap_hist.add(gap);
        if (gap > opt.long_gap_ns) m.long_gap_count++, m.long_gap_ns = sat_add(m.long_gap_ns, gap);
      }
    }
    prev_end = e;
  });

}

void add_nccl_and_compute(const RankTimeline& tl, const Span& whole, const Span& scope, RankMetrics& m) {
  const auto& k = tl.kernels;
  // NCCL union is kept (it is small); compute is streamed against it for the overlap.
  std::vector<Span> nccl;
  union_of(k.start, k.end, [&](size_t i) { return k.is_nccl[i] != 0; }, [&](int64_t s, int64_t e) {
    nccl.push_back({s, e});
    m.whole.nccl_ns = sat_add(m.whole.nccl_ns, whole.overlap(s, e));
    m.scope.nccl_ns = sat_add(m.scope.nccl_ns, scope.overlap(s, e));
  });
  size_t np = 0;
  int64_t overlap_whole = 0, overlap_scope = 0;
  union_of(k.start, k.end, [&](size_t i) { return k.is_nccl[i] == 0; }, [&](int64_t s, int64_t e) {
    m.whole.compute_ns = sat_add(m.whole.compute_ns, whole.overlap(s, e));
    m.scope.compute_ns = sat_add(m.scope.compute_ns, scope.overlap(s, e));
    while (np < nccl.size() && nccl[np].hi <= s) ++np;
    for (size_t q = np; q < nccl.size() && nccl[q].lo < e; ++q) {
      const int64_t a = std::max(s, nccl[q].lo), b = std::min(e, nccl[q].hi);
      overlap_whole = sat_add(overlap_whole, whole.overlap(a, b));
      overlap_scope = sat_add(overlap_scope, scope.overlap(a, b));
    }
  });
  m.whole.exposed_nccl_ns = sat_sub(m.whole.nccl_ns, overlap_whole);
  m.scope.exposed_nccl_ns = sat_sub(m.scope.nccl_ns, overlap_scope);
  m.whole.idle_ns = sat_sub(m.whole.span_ns, m.whole.busy_ns);
  m.scope.idle_ns = sat_sub(m.scope.span_ns, m.scope.busy_ns);

}

void add_kernel_totals(const RankTimeline& tl, const MetricsOptions& opt, const Span& scope, RankMetrics& m) {
  const auto& k = tl.kernels;
  // Kernel totals (whole profile) and duration histograms (scope).
  std::unordered_map<uint32_t, KernelTotal> totals;
  for (size_t i = 0; i < k.size(); ++i) {
    const int64_t d = sat_sub(k.end[i], k.start[i]);
    auto& t = totals[k.name[i]];
    t.name = k.name[i], t.nccl = k.is_nccl[i], t.count++, t.total_ns = sat_add(t.total_ns, d), t.max_ns = std::max(t.max_ns, d);
    if (k.start[i] >= scope.lo && k.start[i] < scope.hi) (k.is_nccl[i] ? m.nccl_hist : m.kernel_hist).add(d);
  }
  for (auto& [name, t] : totals) m.top_kernels.push_back(t);
  std::sort(m.top_kernels.begin(), m.top_kernels.end(), [&](const KernelTotal& a, const KernelTotal& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : tl.names.str(a.name) < tl.names.str(b.name);
  });
  if (m.top_kernels.size() > opt.top_kernels) m.top_kernels.resize(opt.top_kernels);

}

void add_copies_and_syncs(const RankTimeline& tl, const Span& scope, RankMetrics& m) {
  const auto& c = tl.copies;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.start[i] < scope.lo || c.start[i] >= scope.hi) continue;
    const int64_t d = sat_sub(c.end[i], c.start[i]);
    if (c.kind[i] == CopyKind::HtoD) m.h2d_bytes = sat_add(m.h2d_bytes, c.bytes[i]), m.h2d_ns = sat_add(m.h2d_ns, d);
    if (c.kind[i] == CopyKind::DtoH) m.d2h_bytes = sat_add(m.d2h_bytes, c.bytes[i]), m.d2h_ns = sat_add(m.d2h_ns, d);
  }
  const auto& a = tl.api;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.kind[i] != ApiKind::Sync && a.kind[i] != ApiKind::Memcpy) continue;
    if (a.start[i] < scope.lo || a.start[i] >= scope.hi) continue;
    const int64_t d = sat_sub(a.end[i], a.start[i]);
    m.sync_count++, m.sync_ns = sat_add(m.sync_ns, d);
    m.sync_hist.add(d);
  }
}

}  // namespace

RankMetrics compute_metrics(const RankTimeline& tl, const MetricsOptions& opt) {
  if (!tl.nccl_annotated || tl.kernels.is_nccl.size() != tl.kernels.size() || tl.kernels.nccl_api.size() != tl.kernels.size())
    throw std::invalid_argument(tl.file + ": per-rank metrics of a timeline that was not annotated "
                                "(collectives::annotate_nccl, or read it with collectives::read_annotated)");
  RankMetrics m;
  const auto& k = tl.kernels;
  const auto& c = tl.copies;
  m.kernel_count = int64_t(k.size());
  m.copy_count = int64_t(c.size());
  for (auto v : k.is_nccl) m.nccl_kernel_count += v;

  // GPU window.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  activity_union(tl, [&](int64_t s, int64_t e) { lo = std::min(lo, s), hi = std::max(hi, e); });
  if (lo == INT64_MAX) lo = hi = 0;
  m.gpu_start = lo, m.gpu_end = hi;

  m.iterations = find_iterations(tl, opt.iteration_marker, &m.iteration_source, &m.warnings);
  std::vector<double> steps;
  for (const auto& it : m.iterations)
    if (!it.warmup) steps.push_back(double(it.step_ns) / 1e6);
  m.step_ms = common::Distribution::of(steps);
  m.steady = m.iterations.size() >= 2;
  if (m.steady) {
    m.scope_start = m.iterations[1].start;
    m.scope_end = std::max(m.iterations.back().end, sat_add(m.iterations.back().start, m.iterations.back().step_ns));
  } else {
    m.scope_start = lo, m.scope_end = hi;
  }
  const Span whole{m.gpu_start, m.gpu_end}, scope{m.scope_start, m.scope_end};
  m.whole.span_ns = sat_sub(whole.hi, whole.lo);
  m.scope.span_ns = sat_sub(scope.hi, scope.lo);

  add_busy_and_gaps(tl, opt, whole, scope, m);
  add_nccl_and_compute(tl, whole, scope, m);
  add_kernel_totals(tl, opt, scope, m);
  add_copies_and_syncs(tl, scope, m);
  m.hta = hta_breakdown(tl);
  return m;
}

}  // namespace ranks
