#include "collectives/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <cstdio>
#include <cstdlib>

#include "ranks/changepoint.hpp"
#include "ranks/histogram.hpp"

namespace collectives {
namespace {

using ranks::median;

double mad(const std::vector<double>& v, double med) {
  std::vector<double> d;
  for (double x : v) d.push_back(std::abs(x - med));
  return 1.4826 * median(d);
}

// Mean over iterations [from, end) of a per-iteration series (skipping the warm-up, index 0).
double mean_from(const std::vector<double>& v, size_t from) {
  double s = 0;
  size_t n = 0;
  for (size_t i = std::max<size_t>(from, 1); i < v.size(); ++i) s += v[i], ++n;
  return n ? s / double(n) : 0;
}

size_t onset_index(const std::vector<double>& blame) {
  std::vector<double> positive;
  for (size_t i = 1; i < blame.size(); ++i)
    if (blame[i] > 0) positive.push_back(blame[i]);
  std::sort(positive.begin(), positive.end());
  if (positive.empty()) return SIZE_MAX;
  // Median over the late half: its level once it is slow.
  const double level = median(std::vector<double>(positive.begin() + long(positive.size() / 2), positive.end()));
  for (size_t i = 1; i + 1 < blame.size(); ++i)
    if (blame[i] >= 0.5 * level && blame[i + 1] >= 0.5 * level) return i;
  return blame.size() >= 2 && blame.back() >= 0.5 * level ? blame.size() - 1 : SIZE_MAX;
}

// Time per kernel of `name` on a rank from iteration `from` on (ns), or -1 if it has none.
double per_kernel_ns(const RankEvidence& r, const std::string& name, size_t from) {
  for (size_t n = 0; n < r.top_names.size(); ++n) {
    if (r.top_names[n] != name) continue;
    double ns = 0, cnt = 0;
    for (size_t i = std::max<size_t>(from, 1); i < r.name_ns[n].size(); ++i) ns += r.name_ns[n][i], cnt += r.name_count[n][i];
    return cnt > 0 ? ns / cnt : -1;
  }
  return -1;
}

std::string cause_of(const RankEvidence& r, const std::vector<const RankEvidence*>& peers, size_t from,
                     double link_ratio, double excess_ms_per_it, std::string& evidence) {
  // Same kernels slower?
  double weight = 0, log_ratio = 0;
  for (size_t n = 0; n < r.top_names.size(); ++n) {
    const double mine = per_kernel_ns(r, r.top_names[n], from);
    std::vector<double> theirs;
    for (const auto* p : peers)
      if (double t = per_kernel_ns(*p, r.top_names[n], from); t > 0) theirs.push_back(t);
    if (mine <= 0 || theirs.empty()) continue;
    double w = 0;
    for (size_t i = std::max<size_t>(from, 1); i < r.name_ns[n].size(); ++i) w += r.name_ns[n][i];
    weight += w;
    log_ratio += w * std::log(mine / median(theirs));
  }
  const double speed = weight > 0 ? std::exp(log_ratio / weight) : 1.0;
  std::vector<double> pk, pc, pi;
  for (const auto* p : peers)
    pk.push_back(mean_from(p->kernels, from)), pc.push_back(mean_from(p->compute_ms, from)),
        pi.push_back(mean_from(p->idle_ms, from));
  const double kr = mean_from(r.kernels, from) / std::max(median(pk), 1e-9);
  const double cr = mean_from(r.compute_ms, from) / std::max(median(pc), 1e-9);
  const double extra_idle_ms = mean_from(r.idle_ms, from) - median(pi);
  if (speed >= 1.08) {
    evidence = fmt::format("the same compute kernels run {:.2f}x longer than on peers of its role", speed);
    return "slow_gpu";
  }
  if (kr >= 1.08 || cr >= 1.08) {
    evidence = fmt::format("{:.2f}x the compute kernels and {:.2f}x the compute time per iteration of its peers, "
                           "at normal kernel speed ({:.2f}x)", kr, cr, speed);
    return "extra_work";
  }
  if (excess_ms_per_it > 0 && extra_idle_ms >= 0.5 * excess_ms_per_it) {
    evidence = fmt::format("GPU idle {:.2f} ms more per iteration than peers before arriving late "
                           "(kernels at normal speed, {:.2f}x)", extra_idle_ms, speed);
    return "host_delay";
  }
  if (link_ratio >= 1.5) {
    evidence = fmt::format("its communicators transfer {:.2f}x slower than their peers", link_ratio);
    return "slow_link";
  }
  evidence = fmt::format("late, with normal kernel speed ({:.2f}x), work ({:.2f}x) and idle time", speed, kr);
  return "unknown";
}

}  // namespace

Verdict decide(const std::vector<RankEvidence>& ranks, const std::vector<CommEvidence>& comms) {
  Verdict v;
  v.score.assign(ranks.size(), 0);
  v.cause.assign(ranks.size(), "");

  // Job step time per iteration and the steady-state run time.
  size_t iters = 0;
  for (const auto& r : ranks) iters = std::max(iters, r.step_ms.size());
  for (size_t i = 0; i < iters; ++i) {
    std::vector<double> s;
    for (const auto& r : ranks)
      if (i < r.step_ms.size()) s.push_back(r.step_ms[i]);
    v.job_step_ms.push_back(median(s));
  }
  double run_ms = 0;
  for (size_t i = 1; i < v.job_step_ms.size(); ++i) run_ms += v.job_step_ms[i];

  // Slow communicators by family.
  std::map<uint64_t, std::vector<const CommEvidence*>> families;
  for (const auto& c : comms) families[c.family].push_back(&c);
  std::map<int, std::vector<double>> rank_link_ratios;
  for (const auto& [fam, members] : families) {
    // Baseline: the faster half's median (lower quartile), so that a link slowing half of a
    // small family still stands out.
    std::vector<double> t;
    for (const auto* c : members) t.push_back(c->median_transfer_ns);
    std::sort(t.begin(), t.end());
    const double med = median(std::vector<double>(t.begin(), t.begin() + long((t.size() + 1) / 2)));
    std::vector<const CommEvidence*> slow;
    std::vector<double> ratios;
    for (const auto* c : members) {
      const double ratio = med > 0 ? c->median_transfer_ns / med : 1.0;
      for (int r : c->ranks) rank_link_ratios[r].push_back(ratio);
      if (members.size() >= 2 && ratio >= 1.5) slow.push_back(c), ratios.push_back(ratio);
    }
    if (slow.empty() || slow.size() * 2 > members.size()) continue;  // half slow is the norm, not a link
    std::map<std::string, size_t> seen;
    for (const auto* c : slow)
      for (const auto& h : c->hosts) seen[h]++;
    SlowLink link;
    for (const auto& [h, n] : seen)
      if (n == slow.size()) link.hosts.push_back(h);
    if (link.hosts.empty())
      for (const auto& [h, n] : seen)
        if (2 * n > slow.size()) link.hosts.push_back(h);
    for (const auto* c : slow) link.communicators.push_back(c->name);
    link.collective = collective_name(slow.front()->type);
    link.slowdown = median(ratios);
    v.slow_links.push_back(std::move(link));
  }

  // Excess own time per rank and iteration, against the role's median.
  std::map<int, std::vector<size_t>> roles;
  for (size_t i = 0; i < ranks.size(); ++i) roles[ranks[i].role].push_back(i);
  std::vector<std::vector<double>> excess(ranks.size(), std::vector<double>(iters, 0.0));
  for (const auto& [role, idx] : roles)
    for (size_t it = 1; it < iters; ++it) {
      std::vector<double> own(idx.size(), 0.0);
      for (size_t k = 0; k < idx.size(); ++k) {
        const auto& r = ranks[idx[k]];
        const double wait = it < r.wait_by_iteration.size() ? r.wait_by_iteration[it] / 1e6 : 0;
        own[k] = it < r.step_ms.size() ? r.step_ms[it] - wait : 0;
      }
      const double med = median(own);
      for (size_t k = 0; k < idx.size(); ++k) excess[idx[k]][it] = own[k] - med;
    }
  for (const auto& [role, idx] : roles) {
    std::vector<double> total;
    for (size_t i : idx) total.push_back(std::accumulate(excess[i].begin(), excess[i].end(), 0.0));
    const double med = median(total);
    const double spread = std::max(mad(total, med), 0.005 * run_ms);
    std::vector<const RankEvidence*> peers;
    for (size_t i : idx) peers.push_back(&ranks[i]);
    for (size_t k = 0; k < idx.size(); ++k) {
      const size_t i = idx[k];
      const auto& r = ranks[i];
      v.score[i] = spread > 0 ? (total[k] - med) / spread : 0;
      if (getenv("SS_DEBUG")) fprintf(stderr, "rank %d role %d excess %.1f score %.1f blame %.1f wait %.1f\n", r.rank, role, total[k], v.score[i], r.blame_ns/1e6, r.wait_ns/1e6);
      if (v.score[i] < 6 || total[k] < 0.01 * run_ms || r.blame_ns / 1e6 < 0.01 * run_ms) continue;
      Straggler s;
      s.rank = r.rank, s.host = r.host;
      s.blame_ms = r.blame_ns / 1e6, s.hold_ms = r.hold_ns / 1e6, s.excess_ms = total[k];
      s.late_fraction = r.ops > 0 ? r.late / r.ops : 0;
      s.score = v.score[i];
      const size_t on = onset_index(excess[i]);
      const size_t from = on == SIZE_MAX ? 1 : on;
      if (on != SIZE_MAX)
        s.onset_iteration = on < r.iteration_number.size() ? r.iteration_number[on] : int64_t(on);
      std::vector<const RankEvidence*> others;
      for (const auto* p : peers)
        if (p != &r) others.push_back(p);
      const auto& lr = rank_link_ratios[r.rank];
      s.cause = cause_of(r, others, from, lr.empty() ? 1.0 : median(lr), mean_from(excess[i], from), s.evidence);
      s.evidence = fmt::format("{:.1f} ms more own time than its stage peers, peers waited {:.1f} ms on it, last in "
                               "{:.0f}% of its collectives; ", s.excess_ms, s.blame_ms, 100 * s.late_fraction) +
                   s.evidence;
      v.cause[i] = s.cause;
      v.stragglers.push_back(std::move(s));
    }
  }
  std::sort(v.stragglers.begin(), v.stragglers.end(), [](auto& a, auto& b) { return a.blame_ms > b.blame_ms; });

  // Change points of the job step time (warm-up excluded).
  if (v.job_step_ms.size() > 1) {
    std::vector<double> steady(v.job_step_ms.begin() + 1, v.job_step_ms.end());
    for (const auto& cp : ranks::change_points(steady)) {
      JobChangePoint j;
      const size_t at = cp.index + 1;
      j.before_ms = cp.before, j.after_ms = cp.after;
      j.iteration = int64_t(at);
      for (size_t i = 0; i < ranks.size(); ++i) {
        const auto& r = ranks[i];
        if (at < r.iteration_number.size()) j.iteration = r.iteration_number[at];
        std::vector<double> before(excess[i].begin() + 1, excess[i].begin() + long(at)),
            after(excess[i].begin() + long(at), excess[i].end());
        if (std::abs(median(after) - median(before)) >= 0.5 * std::abs(cp.after - cp.before))
          j.culprit_ranks.push_back(r.rank);
      }
      v.change_points.push_back(std::move(j));
    }
  }
  return v;
}

}  // namespace collectives
