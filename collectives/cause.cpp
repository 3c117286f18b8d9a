// A straggler's cause from its own evidence against its role peers' (verdict.hpp, Cause), and the
// per-iteration helpers the verdict shares with it.
#include "cause.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/stats.hpp"

namespace collectives::verdict_detail {

using common::median;

// Mean over iterations [from, to) of a per-iteration series (skipping the warm-up, index 0).
double mean_from(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  size_t n = 0;
  for (size_t i = std::max<size_t>(from, 1); i < std::min(v.size(), to); ++i) s += v[i], ++n;
  return n ? s / double(n) : 0;
}

int64_t number(const RankEvidence& r, size_t index) {
  return index < r.iteration_number.size() ? r.iteration_number[index] : int64_t(index);
}

namespace {

// Time per kernel of `name` on a rank over iterations [from, to) (ns), or -1 if it has none.
double per_kernel_ns(const RankEvidence& r, const std::string& name, size_t from, size_t to) {
  for (size_t n = 0; n < r.top_names.size(); ++n) {
    if (r.top_names[n] != name) continue;
    double ns = 0, cnt = 0;
    for (size_t i = std::max<size_t>(from, 1); i < std::min(r.name_ns[n].size(), to); ++i)
      ns += r.name_ns[n][i], cnt += r.name_count[n][i];
    return cnt > 0 ? ns / cnt : -1;
  }
  return -1;
}


// Its top compute kernels' time against a reference, each kernel by its time over [from, to)
// (the warm-up left out): the time-weighted geometric mean of `ratio(n)` (<= 0: no reference for
// kernel n); 1 where none has one.
template <class Ratio>
double weighted_speed(const RankEvidence& r, size_t from, size_t to, Ratio ratio) {
  double weight = 0, log_ratio = 0;
  for (size_t n = 0; n < r.top_names.size(); ++n) {
    const double x = ratio(n);
    if (!(x > 0)) continue;
    double w = 0;
    for (size_t i = std::max<size_t>(from, 1); i < std::min(r.name_ns[n].size(), to); ++i) w += r.name_ns[n][i];
    weight += w, log_ratio += w * std::log(x);
  }
  return weight > 0 ? std::exp(log_ratio / weight) : 1.0;
}

// Its top compute kernels' time per kernel over [from, to) against its own iterations before
// `from`: 1 where it has under two such iterations. Medians over iterations on each side: a job
// change point may be found an iteration after the GPU slowed, and one slow iteration in the
// baseline must not halve the ratio.
double own_speed(const RankEvidence& r, size_t from, size_t to) {
  if (from < 3) return 1.0;
  std::vector<double> before, after;
  return weighted_speed(r, from, to, [&](size_t n) {
    before.clear(), after.clear();
    for (size_t i = 1; i < std::min({r.name_ns[n].size(), r.name_count[n].size(), to}); ++i)
      if (r.name_count[n][i] > 0) (i < from ? before : after).push_back(r.name_ns[n][i] / r.name_count[n][i]);
    return before.empty() || after.empty() || median(before) <= 0 ? 0.0 : median(after) / median(before);
  });
}

}  // namespace

Cause cause_of(const RankEvidence& r, const std::vector<const RankEvidence*>& peers, const CauseInput& in,
               const VerdictOptions& opt, std::string& evidence, double& own_slowdown) {
  const size_t from = in.from, to = in.to;
  const double link_ratio = in.link_ratio, extra_transfer_ms = in.extra_transfer_ms,
               excess_ms_per_it = in.excess_ms_per_it;
  // Same kernels slower?
  std::vector<double> theirs;
  const double speed = weighted_speed(r, from, to, [&](size_t n) {
    const double mine = per_kernel_ns(r, r.top_names[n], from, to);
    theirs.clear();
    for (const auto* p : peers)
      if (double t = per_kernel_ns(*p, r.top_names[n], from, to); t > 0) theirs.push_back(t);
    return mine <= 0 || theirs.empty() ? 0.0 : mine / median(theirs);
  });
  // Its peers of its role may have slowed with it (a host that is a whole pipeline stage holds no
  // healthy peer of its role): its kernels against its own iterations before the onset then.
  if (speed < opt.slow_gpu_ratio && in.own_baseline) {
    const double own = own_speed(r, from, to);
    if (own >= opt.slow_gpu_ratio) {
      evidence = fmt::format("the same compute kernels run {:.2f}x longer than in its own iterations before {} (its "
                             "peers of its role slowed with it: {:.2f}x against them)",
                             own, number(r, from), speed);
      own_slowdown = own;
      return Cause::SlowGpu;
    }
  }
  std::vector<double> pk, pc, pi;
  for (const auto* p : peers)
    pk.push_back(mean_from(p->kernels, from, to)), pc.push_back(mean_from(p->compute_ms, from, to)),
        pi.push_back(mean_from(p->idle_ms, from, to));
  // No peer data in the window (e.g. their iterations ended): no evidence of more work.
  const double kr = median(pk) > 0 ? mean_from(r.kernels, from, to) / median(pk) : 1.0;
  const double cr = median(pc) > 0 ? mean_from(r.compute_ms, from, to) / median(pc) : 1.0;
  const double extra_idle_ms = mean_from(r.idle_ms, from, to) - median(pi);
  if (speed >= opt.slow_gpu_ratio) {
    evidence = fmt::format("the same compute kernels run {:.2f}x longer than on peers of its role", speed);
    return Cause::SlowGpu;
  }
  if (kr >= opt.extra_work_ratio || cr >= opt.extra_work_ratio) {
    evidence = fmt::format("{:.2f}x the compute kernels and {:.2f}x the compute time per iteration of its peers, "
                           "at normal kernel speed ({:.2f}x)", kr, cr, speed);
    return Cause::ExtraWork;
  }
  // Its own transfers, not its arrival: the excess is time moving data over a slow communicator.
  if (link_ratio >= opt.slow_link_ratio && excess_ms_per_it > 0 &&
      extra_transfer_ms >= opt.slow_link_transfer * excess_ms_per_it) {
    evidence = fmt::format("its transfers take {:.2f} ms more per iteration than its peers' and its communicators "
                           "transfer up to {:.2f}x slower than their like (kernels at normal speed, {:.2f}x)",
                           extra_transfer_ms, link_ratio, speed);
    return Cause::SlowLink;
  }
  if (excess_ms_per_it > 0 && extra_idle_ms >= opt.host_delay_idle * excess_ms_per_it) {
    evidence = fmt::format("GPU idle {:.2f} ms more per iteration than peers before arriving late "
                           "(kernels at normal speed, {:.2f}x)", extra_idle_ms, speed);
    return Cause::HostDelay;
  }
  evidence = fmt::format("late, with normal kernel speed ({:.2f}x), work ({:.2f}x) and idle time", speed, kr);
  return Cause::Unknown;
}

}  // namespace collectives::verdict_detail
