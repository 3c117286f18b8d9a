#include "collectives/verdict.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

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

// Mean over iterations [from, to) of a per-iteration series (skipping the warm-up, index 0).
double mean_from(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  size_t n = 0;
  for (size_t i = std::max<size_t>(from, 1); i < std::min(v.size(), to); ++i) s += v[i], ++n;
  return n ? s / double(n) : 0;
}

// Its level once it is slow: the median of the upper half of the positive values in [from, to);
// 0 when none is positive.
double slow_level(const std::vector<double>& v, size_t from, size_t to) {
  std::vector<double> positive;
  for (size_t i = from; i < to && i < v.size(); ++i)
    if (v[i] > 0) positive.push_back(v[i]);
  std::sort(positive.begin(), positive.end());
  return median(std::vector<double>(positive.begin() + long(positive.size() / 2), positive.end()));
}

size_t onset_index(const std::vector<double>& blame) {
  const double level = slow_level(blame, 1, blame.size());
  if (level <= 0) return SIZE_MAX;
  for (size_t i = 1; i + 1 < blame.size(); ++i)
    if (blame[i] >= 0.5 * level && blame[i + 1] >= 0.5 * level) return i;
  return blame.size() >= 2 && blame.back() >= 0.5 * level ? blame.size() - 1 : SIZE_MAX;
}

// The onset of a rank's excess that is judged over [from, to): its level there, traced back to the
// first iteration from which it (nearly) always stays at half that level. A window that opens at a
// later fault's change point must not move an earlier onset of this rank to it.
size_t onset_before(const std::vector<double>& excess, size_t from, size_t to) {
  std::vector<double> in(excess.begin(), excess.begin() + long(to));
  std::fill(in.begin(), in.begin() + long(std::min(from, to)), 0.0);
  const size_t in_window = onset_index(in);
  if (in_window == SIZE_MAX) return SIZE_MAX;
  const double half = 0.5 * slow_level(excess, from, to);
  for (size_t i = 1; i + 1 < in_window; ++i) {
    if (excess[i] < half || excess[i + 1] < half) continue;
    size_t high = 0;
    for (size_t j = i; j < to; ++j) high += excess[j] >= half;
    if (high * 4 >= (to - i) * 3) return i;
  }
  return in_window;
}

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

std::string cause_of(const RankEvidence& r, const std::vector<const RankEvidence*>& peers, size_t from, size_t to,
                     double link_ratio, double extra_transfer_ms, double excess_ms_per_it, std::string& evidence) {
  // Same kernels slower?
  double weight = 0, log_ratio = 0;
  for (size_t n = 0; n < r.top_names.size(); ++n) {
    const double mine = per_kernel_ns(r, r.top_names[n], from, to);
    std::vector<double> theirs;
    for (const auto* p : peers)
      if (double t = per_kernel_ns(*p, r.top_names[n], from, to); t > 0) theirs.push_back(t);
    if (mine <= 0 || theirs.empty()) continue;
    double w = 0;
    for (size_t i = std::max<size_t>(from, 1); i < std::min(r.name_ns[n].size(), to); ++i) w += r.name_ns[n][i];
    weight += w;
    log_ratio += w * std::log(mine / median(theirs));
  }
  const double speed = weight > 0 ? std::exp(log_ratio / weight) : 1.0;
  std::vector<double> pk, pc, pi;
  for (const auto* p : peers)
    pk.push_back(mean_from(p->kernels, from, to)), pc.push_back(mean_from(p->compute_ms, from, to)),
        pi.push_back(mean_from(p->idle_ms, from, to));
  // No peer data in the window (e.g. their iterations ended): no evidence of more work.
  const double kr = median(pk) > 0 ? mean_from(r.kernels, from, to) / median(pk) : 1.0;
  const double cr = median(pc) > 0 ? mean_from(r.compute_ms, from, to) / median(pc) : 1.0;
  const double extra_idle_ms = mean_from(r.idle_ms, from, to) - median(pi);
  if (speed >= 1.08) {
    evidence = fmt::format("the same compute kernels run {:.2f}x longer than on peers of its role", speed);
    return "slow_gpu";
  }
  if (kr >= 1.08 || cr >= 1.08) {
    evidence = fmt::format("{:.2f}x the compute kernels and {:.2f}x the compute time per iteration of its peers, "
                           "at normal kernel speed ({:.2f}x)", kr, cr, speed);
    return "extra_work";
  }
  // Its own transfers, not its arrival: the excess is time moving data over a slow communicator.
  if (link_ratio >= 1.5 && excess_ms_per_it > 0 && extra_transfer_ms >= 0.5 * excess_ms_per_it) {
    evidence = fmt::format("its transfers take {:.2f} ms more per iteration than its peers' and its communicators "
                           "transfer up to {:.2f}x slower than their like (kernels at normal speed, {:.2f}x)",
                           extra_transfer_ms, link_ratio, speed);
    return "slow_link";
  }
  if (excess_ms_per_it > 0 && extra_idle_ms >= 0.5 * excess_ms_per_it) {
    evidence = fmt::format("GPU idle {:.2f} ms more per iteration than peers before arriving late "
                           "(kernels at normal speed, {:.2f}x)", extra_idle_ms, speed);
    return "host_delay";
  }
  evidence = fmt::format("late, with normal kernel speed ({:.2f}x), work ({:.2f}x) and idle time", speed, kr);
  return "unknown";
}

// Slow communicators: compared only with their like (same family, or every two-member SendRecv
// link for pipeline p2p, and the same number of hosts: NVLink inside a host is not a slow NIC).
void find_slow_links(const std::vector<CommEvidence>& comms, Verdict& v, std::map<int, double>& rank_link_ratio,
                     std::map<int, std::set<std::string>>& rank_slow_comms) {
  std::map<std::pair<uint64_t, size_t>, std::vector<const CommEvidence*>> groups;
  for (const auto& c : comms) {
    const bool p2p = c.type == CollectiveType::SendRecv && c.ranks.size() == 2;
    groups[{p2p ? 0 : c.family, c.hosts.size()}].push_back(&c);
  }
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    // Baseline: the faster half's median (lower quartile), so that a link slowing half of a
    // small group still stands out.
    std::vector<double> t;
    for (const auto* c : members) t.push_back(c->median_transfer_ns);
    std::sort(t.begin(), t.end());
    const double base = median(std::vector<double>(t.begin(), t.begin() + long((t.size() + 1) / 2)));
    std::vector<const CommEvidence*> slow;
    std::vector<double> ratios;
    for (const auto* c : members) {
      const double ratio = base > 0 ? c->median_transfer_ns / base : 1.0;
      for (int r : c->ranks) {
        rank_link_ratio[r] = std::max(rank_link_ratio[r], ratio);
        if (ratio >= 1.5) rank_slow_comms[r].insert(c->name);
      }
      if (ratio >= 1.5) slow.push_back(c), ratios.push_back(ratio);
    }
    if (slow.empty() || slow.size() * 2 > members.size()) continue;  // half slow is the norm, not a link
    // The hosts every slow communicator spans (else those most of them span): a ring is as slow as
    // its slowest hop, so a link is only narrowed down as far as the communicators allow.
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
  // One link seen by several groups (all-reduce and p2p over a host's NIC) is one row: rows that
  // share hosts merge into the hosts they share.
  auto& L = v.slow_links;
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < L.size() && !merged; ++i)
      for (size_t j = i + 1; j < L.size() && !merged; ++j) {
        std::vector<std::string> both;
        std::set_intersection(L[i].hosts.begin(), L[i].hosts.end(), L[j].hosts.begin(), L[j].hosts.end(),
                              std::back_inserter(both));
        if (both.empty()) continue;
        L[i].hosts = both;
        L[i].communicators.insert(L[i].communicators.end(), L[j].communicators.begin(), L[j].communicators.end());
        if (L[j].slowdown > L[i].slowdown) L[i].slowdown = L[j].slowdown, L[i].collective = L[j].collective;
        L.erase(L.begin() + long(j)), merged = true;
      }
  }
}

int64_t number(const RankEvidence& r, size_t index) {
  return index < r.iteration_number.size() ? r.iteration_number[index] : int64_t(index);
}

bool explained_by_slow_links(const std::vector<SlowLink>& links, const std::set<std::string>& slow_comms) {
  for (const auto& name : slow_comms) {
    bool listed = false;
    for (const auto& l : links) listed |= std::find(l.communicators.begin(), l.communicators.end(), name) != l.communicators.end();
    if (!listed) return false;
  }
  return !slow_comms.empty();
}

// Iteration indexes [from, to) a rank is judged on (see verdict.hpp: the whole steady run and the
// stretches around change points).
struct Window {
  size_t from, to;
  bool operator<(const Window& o) const { return std::tie(from, to) < std::tie(o.from, o.to); }
};

}  // namespace

// Every shift of the job's step time gets an explanation: the stragglers among the ranks that
// changed there, a slow link, or, explicitly, a job that slowed down as a whole.
void explain_change_points(Verdict& v) {
  for (auto& cp : v.change_points) {
    std::vector<int> named;
    for (const auto& s : v.stragglers)
      if (std::count(cp.culprit_ranks.begin(), cp.culprit_ranks.end(), s.rank)) named.push_back(s.rank);
    std::sort(named.begin(), named.end());
    if (!named.empty())
      cp.explanation = fmt::format("straggler{} {}", named.size() == 1 ? "" : "s", fmt::join(named, ", "));
    else if (!v.slow_links.empty())
      cp.explanation = "slow link";
    else if (!cp.culprit_ranks.empty() && !v.stragglers.empty())
      cp.explanation = "ranks that changed are not stragglers; see the stragglers named above";
    else if (!cp.culprit_ranks.empty())
      cp.explanation = "the ranks that changed stay within their peers' spread: no rank stands out";
    else
      cp.explanation = "the job as a whole slowed down (no rank stands out)";
  }
}

Verdict decide(const std::vector<RankEvidence>& ranks, const std::vector<CommEvidence>& comms,
               size_t clean_iterations) {
  Verdict v;
  v.score.assign(ranks.size(), 0);
  v.cause.assign(ranks.size(), "");

  // Job step time per iteration. Ranks are compared only over the iterations every rank has
  // (a capture that ends early or a hung rank leaves the others' later iterations unmatched).
  size_t iters = 0, common = SIZE_MAX;
  for (const auto& r : ranks) {
    iters = std::max(iters, r.step_ms.size());
    if (!r.step_ms.empty()) common = std::min(common, r.step_ms.size());
  }
  if (common == SIZE_MAX) common = 0;
  common = std::min(common, clean_iterations);
  for (size_t i = 0; i < iters; ++i) {
    std::vector<double> s;
    for (const auto& r : ranks)
      if (i < r.step_ms.size()) s.push_back(r.step_ms[i]);
    v.job_step_ms.push_back(median(s));
  }
  auto run_ms = [&](Window w) {
    double t = 0;
    for (size_t i = std::max<size_t>(w.from, 1); i < w.to; ++i) t += v.job_step_ms[i];
    return t;
  };

  std::map<int, double> rank_link_ratio;
  std::map<int, std::set<std::string>> rank_slow_comms;
  find_slow_links(comms, v, rank_link_ratio, rank_slow_comms);

  // Excess own time per rank and iteration, against the role's median.
  std::map<int, std::vector<size_t>> roles;
  for (size_t i = 0; i < ranks.size(); ++i) roles[ranks[i].role].push_back(i);
  std::vector<std::vector<double>> excess(ranks.size(), std::vector<double>(common, 0.0));
  for (const auto& [role, idx] : roles)
    for (size_t it = 1; it < common; ++it) {
      std::vector<double> own(idx.size(), 0.0);
      for (size_t k = 0; k < idx.size(); ++k) {
        const auto& r = ranks[idx[k]];
        const double wait = it < r.wait_by_iteration.size() ? r.wait_by_iteration[it] / 1e6 : 0;
        own[k] = it < r.step_ms.size() ? r.step_ms[it] - wait : 0;
      }
      const double med = median(own);
      for (size_t k = 0; k < idx.size(); ++k) excess[idx[k]][it] = own[k] - med;
    }

  // Change points of the job step time (warm-up excluded, common iterations only).
  std::vector<Window> windows;  // empty without a steady iteration every rank has (e.g. an early hang)
  if (common > 1) {
    windows.push_back({1, common});
    std::vector<double> steady(v.job_step_ms.begin() + 1, v.job_step_ms.begin() + long(common));
    for (const auto& cp : ranks::change_points(steady)) {
      JobChangePoint j;
      const size_t at = cp.index + 1;
      windows.push_back({at, common}), windows.push_back({1, at});
      j.before_ms = cp.before, j.after_ms = cp.after;
      for (size_t i = 0; i < ranks.size(); ++i) {
        const auto& r = ranks[i];
        j.iteration = number(r, at);
        std::vector<double> before(excess[i].begin() + 1, excess[i].begin() + long(at)),
            after(excess[i].begin() + long(at), excess[i].end());
        if (std::abs(median(after) - median(before)) >= 0.5 * std::abs(cp.after - cp.before))
          j.culprit_ranks.push_back(r.rank);
      }
      v.change_points.push_back(std::move(j));
    }
  }

  // Robust z of every rank's summed excess over a window: against its role's median, scaled by the
  // role's MAD (roles of 3 or more) or by the MAD of all ranks' residuals pooled (a role of two
  // cannot tell which of its pair is off), floored at 0.25% of the window's run time.
  std::vector<std::vector<double>> prefix(ranks.size());  // prefix sums of excess
  for (size_t i = 0; i < ranks.size(); ++i) {
    prefix[i].assign(common + 1, 0.0);
    for (size_t it = 0; it < common; ++it) prefix[i][it + 1] = prefix[i][it] + excess[i][it];
  }
  auto total_of = [&](size_t i, Window w) { return prefix[i][w.to] - prefix[i][w.from]; };
  std::map<Window, std::vector<double>> judged;  // ranks' change points often coincide
  auto judge = [&](Window w) -> const std::vector<double>& {
    auto [hit, fresh] = judged.try_emplace(w);
    if (!fresh) return hit->second;
    std::vector<double>& z = hit->second;
    z.assign(ranks.size(), 0.0);
    std::vector<double> residual(ranks.size(), 0.0), role_spread(ranks.size(), 0.0);
    for (const auto& [role, idx] : roles) {
      std::vector<double> total;
      for (size_t i : idx) total.push_back(total_of(i, w));
      const double med = median(total);
      const double m = idx.size() >= 3 ? mad(total, med) : -1;
      for (size_t k = 0; k < idx.size(); ++k) residual[idx[k]] = total[k] - med, role_spread[idx[k]] = m;
    }
    const double pooled = mad(residual, 0.0), floor = 0.0025 * run_ms(w);
    for (size_t i = 0; i < ranks.size(); ++i) {
      const double spread = std::max(role_spread[i] >= 0 ? role_spread[i] : pooled, floor);
      z[i] = spread > 0 ? residual[i] / spread : 0;
    }
    return z;
  };
  // A straggler holds its peers back (blame). A rank whose own change is overwhelming (z >= 8 on
  // its own baseline, 2% of the run) qualifies without: a slower rank may hide it (peers wait for
  // that one), and it becomes the straggler as soon as the slower one is fixed.
  auto qualifies = [&](size_t i, Window w, double z, bool own_shift = false) {
    const double run = run_ms(w);
    double blame = 0;
    for (size_t it = w.from; it < w.to && it < ranks[i].blame_by_iteration.size(); ++it)
      blame += ranks[i].blame_by_iteration[it] / 1e6;
    if (own_shift && z >= 8 && total_of(i, w) >= 0.02 * run) return true;
    return z >= 6 && total_of(i, w) >= 0.01 * run && blame >= 0.01 * run;
  };
  // Job-wide windows for everyone; each rank also gets the stretches around the change points of
  // its own excess (a small or late slowdown of one rank moves no job-wide median).
  std::vector<double> best_z(ranks.size(), -1e300);
  std::vector<Window> best_w(ranks.size(), Window{0, 0});
  auto consider = [&](size_t i, Window w, double z, bool own_shift = false) {
    if (qualifies(i, w, z, own_shift) && (best_w[i].to == 0 || z > best_z[i])) best_z[i] = z, best_w[i] = w;
  };
  for (size_t w = 0; w < windows.size(); ++w) {
    const auto& z = judge(windows[w]);
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (w == 0) v.score[i] = z[i];
      consider(i, windows[w], z[i]);
    }
  }
  // Around a rank's own change point, also its change against its own baseline: how much its
  // excess per iteration moved from before to after, against the same move of its role's peers.
  // Constant per-rank offsets (a rank that always runs 2 ms long) cancel out here, while summed
  // over a window they would widen the peers' spread and hide a real onset.
  std::map<size_t, std::vector<double>> shifted;  // change index -> z per rank
  auto judge_shift = [&](size_t at) -> const std::vector<double>& {
    auto [hit, fresh] = shifted.try_emplace(at);
    if (!fresh) return hit->second;
    std::vector<double>& z = hit->second;
    z.assign(ranks.size(), 0.0);
    std::vector<double> delta(ranks.size(), 0.0);
    for (size_t i = 0; i < ranks.size(); ++i)
      delta[i] = (total_of(i, {at, common}) / double(common - at)) - (total_of(i, {1, at}) / double(at - 1));
    const double floor = 0.005 * run_ms({1, common}) / double(common - 1);
    for (const auto& [role, idx] : roles) {
      if (idx.size() < 3) continue;  // a pair cannot tell which of the two moved
      std::vector<double> d;
      for (size_t k : idx) d.push_back(delta[k]);
      const double med = median(d), spread = std::max(mad(d, med), floor);
      for (size_t k : idx) z[k] = (delta[k] - med) / spread;
    }
    return z;
  };
  if (common > 1)
    for (size_t i = 0; i < ranks.size(); ++i) {
      std::vector<double> steady(excess[i].begin() + 1, excess[i].end());
      for (const auto& cp : ranks::change_points(steady)) {
        const size_t at = cp.index + 1;
        for (Window w : {Window{at, common}, Window{1, at}}) consider(i, w, judge(w)[i]);
        if (at >= 3 && common - at >= 2) consider(i, Window{at, common}, judge_shift(at)[i], true);
      }
    }

  for (const auto& [role, idx] : roles) {
    std::vector<const RankEvidence*> peers;
    for (size_t i : idx) peers.push_back(&ranks[i]);
    std::vector<double> transfers;
    for (const auto* p : peers) transfers.push_back(p->transfer_ns);
    const double median_transfer_ns = median(transfers);
    for (size_t i : idx) {
      if (best_w[i].to == 0) continue;
      const auto& r = ranks[i];
      const Window win = best_w[i];
      const bool whole = win.from == 1 && win.to == common;
      Straggler s;
      s.rank = r.rank, s.host = r.host;
      s.blame_ms = r.blame_ns / 1e6, s.hold_ms = r.hold_ns / 1e6;
      s.excess_ms = total_of(i, win);
      s.late_fraction = r.ops > 0 ? r.late / r.ops : 0;
      s.score = best_z[i];
      v.score[i] = std::max(v.score[i], s.score);
      const size_t on = onset_before(excess[i], win.from, win.to);
      const size_t from = on == SIZE_MAX ? win.from : on;
      if (on != SIZE_MAX) s.onset_iteration = number(r, on);
      std::vector<const RankEvidence*> others;
      for (const auto* p : peers)
        if (p != &r) others.push_back(p);
      // Transfer time beyond its role's median, per iteration of its profile.
      const double extra_transfer_ms =
          (r.transfer_ns - median_transfer_ns) / 1e6 / double(std::max<size_t>(r.step_ms.size(), 1));
      const double excess_per_it = s.excess_ms / double(std::max<size_t>(win.to - std::max<size_t>(from, 1), 1));
      s.cause = cause_of(r, others, from, win.to, rank_link_ratio[r.rank], extra_transfer_ms, excess_per_it, s.evidence);
      s.evidence = fmt::format("{:.1f} ms more own time than its stage peers{}, peers waited {:.1f} ms on it, last in "
                               "{:.0f}% of its collectives; ",
                               s.excess_ms, whole ? "" : fmt::format(" over iterations {}-{}", number(r, win.from), number(r, win.to - 1)),
                               s.blame_ms, 100 * s.late_fraction) +
                   s.evidence;
      // Its transfers are slow only on communicators already named in slow_links: the link is the
      // finding, not the rank (the contract's "transfers slow for reasons no single rank explains").
      if (s.cause == "slow_link" && explained_by_slow_links(v.slow_links, rank_slow_comms[r.rank])) continue;
      v.cause[i] = s.cause;
      v.stragglers.push_back(std::move(s));
    }
  }
  std::sort(v.stragglers.begin(), v.stragglers.end(), [](auto& a, auto& b) { return a.blame_ms > b.blame_ms; });
  explain_change_points(v);
  return v;
}

}  // namespace collectives
