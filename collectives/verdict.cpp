#include "collectives/verdict.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "common/stats.hpp"
#include "cause.hpp"
#include "consistency.hpp"
#include "onset.hpp"
#include "host_culprits.hpp"
#include "slow_links.hpp"
#include "shift_culprits.hpp"
#include "ranks/changepoint.hpp"

namespace collectives {

const char* cause_name(Cause c) {
  switch (c) {
    case Cause::None: return "";
    case Cause::SlowGpu: return "slow_gpu";
    case Cause::ExtraWork: return "extra_work";
    case Cause::SlowLink: return "slow_link";
    case Cause::HostDelay: return "host_delay";
    case Cause::Unknown: break;
  }
  return "unknown";
}

namespace {

using common::median;
using verdict_detail::CauseInput;
using verdict_detail::mean_from;
using verdict_detail::number;

double mad(const std::vector<double>& v, double med) { return common::mad_sigma(v, med); }

OnsetOptions onset_options(const VerdictOptions& o) { return {o.onset_level, o.onset_stay}; }

// Iteration indexes [from, to) a rank is judged on (see verdict.hpp: the whole steady run and the
// stretches around change points).
struct Window {
  size_t from, to;
  bool operator<(const Window& o) const { return std::tie(from, to) < std::tie(o.from, o.to); }
};

}  // namespace



namespace {

// What decide works on: the job's step time, the ranks by role, their excess own time per
// iteration over the iterations every rank has, and the best stretch each rank qualifies on.
struct Run {
  Run(const std::vector<RankEvidence>& r, const VerdictOptions& o, Verdict& verdict) : ranks(r), opt(o), v(verdict) {}
  const std::vector<RankEvidence>& ranks;
  const VerdictOptions& opt;
  Verdict& v;
  size_t common = 0;  // iteration indexes [0, common): every rank has them, before any desync
  std::map<int, std::vector<size_t>> roles;             // role -> indexes into ranks
  std::vector<std::vector<double>> own;                 // [rank][iteration] ms: step less exposed waits
  std::vector<std::vector<double>> excess, prefix;      // [rank][iteration] ms; prefix sums of excess
  std::vector<size_t> job_changes;                      // iteration index of each of v.change_points
  std::vector<std::vector<double>> extra_idle;          // [rank][iteration] ms: GPU idle beyond its role's median
  std::map<Window, std::vector<double>> judged;         // z per rank (ranks' change points often coincide)
  std::map<size_t, std::vector<double>> shifted;        // change index -> own-shift z per rank
  std::vector<double> best_z;
  std::vector<Window> best_w;                           // {0, 0}: qualifies nowhere
  std::optional<Consistency> own_repeats, idle_repeats;  // per-iteration evidence (consistency.hpp)
  std::vector<uint8_t> by_idle;                          // qualified on its extra GPU idle only
  std::vector<uint8_t> by_shift;                         // a change point's culprit (name_by_shift)

  double run_ms(Window w) const {
    double t = 0;
    for (size_t i = std::max<size_t>(w.from, 1); i < w.to; ++i) t += v.job_step_ms[i];
    return t;
  }
  double total_of(size_t i, Window w) const { return prefix[i][w.to] - prefix[i][w.from]; }
  const std::vector<double>& judge(Window w);
  const std::vector<double>& judge_shift(size_t at);
  double blame_in(size_t i, Window w) const;
  // A stretch other than the whole steady run was picked at a change point, after the fact: the
  // test counts a try for every stretch that could have been picked so, before or after each
  // place a change could sit (three hiccups in a row on one of 64 ranks over 14 iterations are
  // no rare sight, and a change point finds them).
  bool whole(Window w) const { return w.from <= 1 && w.to >= common; }
  bool repeats(const Consistency& c, size_t i, Window w) const {
    return c.passes(i, w.from, w.to, whole(w) ? 1.0 : picked_windows());
  }
  double picked_windows() const { return 2.0 * double(std::max<size_t>(common, 3) - 2); }
  bool qualifies(size_t i, Window w, double z, bool own_shift) const;
  bool idle_qualifies(size_t i, Window w) const;
  void consider(size_t i, Window w, double z, bool own_shift = false) {
    // The idle channel judges the whole steady run only: a small delay that counts is a lasting one.
    const bool own = qualifies(i, w, z, own_shift), idle = !own && !own_shift && whole(w) && idle_qualifies(i, w);
    if ((own || idle) && (best_w[i].to == 0 || z > best_z[i])) best_z[i] = z, best_w[i] = w, by_idle[i] = idle;
  }
};

// Job step time per iteration (median over ranks); returns the number of iterations every rank
// has (a capture that ends early or a hung rank leaves the others' later iterations unmatched),
// cut at the first desync.
size_t job_step_times(const std::vector<RankEvidence>& ranks, size_t clean_iterations, Verdict& v) {
  size_t iters = 0, common = SIZE_MAX;
  for (const auto& r : ranks) {
    iters = std::max(iters, r.step_ms.size());
    if (!r.step_ms.empty()) common = std::min(common, r.step_ms.size());
  }
  if (common == SIZE_MAX) common = 0;
  for (size_t i = 0; i < iters; ++i) {
    std::vector<double> s;
    for (const auto& r : ranks)
      if (i < r.step_ms.size()) s.push_back(r.step_ms[i]);
    v.job_step_ms.push_back(median(s));
  }
  return std::min(common, clean_iterations);
}

// Excess own time (step - waits) per rank and iteration against its role's median, and its
// prefix sums.
void excess_own_time(Run& run) {
  const auto& ranks = run.ranks;
  for (size_t i = 0; i < ranks.size(); ++i) run.roles[ranks[i].role].push_back(i);
  run.excess.assign(ranks.size(), std::vector<double>(run.common, 0.0));
  run.own.assign(ranks.size(), std::vector<double>(run.common, 0.0));
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t it = 1; it < run.common; ++it) {
      const auto& r = ranks[i];
      const double wait = it < r.comm_ms.size()              ? r.comm_ms[it]
                          : it < r.wait_by_iteration.size() ? r.wait_by_iteration[it] / 1e6
                                                            : 0;
      run.own[i][it] = it < r.step_ms.size() ? r.step_ms[it] - wait : 0;
    }
  for (const auto& [role, idx] : run.roles)
    for (size_t it = 1; it < run.common; ++it) {
      std::vector<double> own(idx.size(), 0.0);
      for (size_t k = 0; k < idx.size(); ++k) own[k] = run.own[idx[k]][it];
      const double med = median(own);
      for (size_t k = 0; k < idx.size(); ++k) run.excess[idx[k]][it] = own[k] - med;
    }
  run.prefix.resize(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    run.prefix[i].assign(run.common + 1, 0.0);
    for (size_t it = 0; it < run.common; ++it) run.prefix[i][it + 1] = run.prefix[i][it] + run.excess[i][it];
  }
}

// Change points of the job step time (warm-up excluded, common iterations only) with their
// culprits; returns the windows to judge every rank on: the whole steady run, then the stretches
// after and before each change. Empty without a steady iteration every rank has (an early hang).
std::vector<Window> job_change_points(Run& run) {
  std::vector<Window> windows;
  const size_t common = run.common;
  if (common <= 1) return windows;
  auto& v = run.v;
  windows.push_back({1, common});
  std::vector<double> steady(v.job_step_ms.begin() + 1, v.job_step_ms.begin() + long(common));
  std::vector<ranks::ChangePoint> cps = ranks::change_points(steady);
  // A rise in the last iterations (a fault that starts late): judged with the few it had, against
  // the level since the last change point.
  size_t last = 0;
  for (const auto& c : cps) last = std::max(last, c.index);
  const std::vector<double> since(steady.begin() + long(last), steady.end());
  if (auto tail = ranks::tail_rise(since)) {
    tail->index += last;
    cps.push_back(*tail);
  }
  for (const auto& cp : cps) {
    JobChangePoint j;
    const size_t at = cp.index + 1;
    j.iterations_after = int64_t(common - at);
    windows.push_back({at, common}), windows.push_back({1, at});
    run.job_changes.push_back(at);
    j.before_ms = cp.before, j.after_ms = cp.after;
    for (size_t i = 0; i < run.ranks.size(); ++i) {
      const auto& r = run.ranks[i];
      const auto& e = run.excess[i];
      j.iteration = number(r, at);
      std::vector<double> before(e.begin() + 1, e.begin() + long(at)), after(e.begin() + long(at), e.end());
      if (std::abs(median(after) - median(before)) >= run.opt.culprit_shift * std::abs(cp.after - cp.before))
        j.culprit_ranks.push_back(r.rank);
    }
    v.change_points.push_back(std::move(j));
  }
  return windows;
}

// Robust z of every rank's summed excess over a window: against its role's median, scaled by the
// role's MAD (roles of 3 or more) or by the MAD of all ranks' residuals pooled (a role of two
// cannot tell which of its pair is off), floored at a share of the window's run time.
const std::vector<double>& Run::judge(Window w) {
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
  const double pooled = mad(residual, 0.0), floor = opt.spread_floor * run_ms(w);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const double spread = std::max(role_spread[i] >= 0 ? role_spread[i] : pooled, floor);
    z[i] = spread > 0 ? residual[i] / spread : 0;
  }
  return z;
}

// Around a rank's own change point, its change against its own baseline: how much its excess per
// iteration moved from before to after, against the same move of its role's peers. Constant
// per-rank offsets (a rank that always runs 2 ms long) cancel out here, while summed over a window
// they would widen the peers' spread and hide a real onset.
const std::vector<double>& Run::judge_shift(size_t at) {
  auto [hit, fresh] = shifted.try_emplace(at);
  if (!fresh) return hit->second;
  std::vector<double>& z = hit->second;
  z.assign(ranks.size(), 0.0);
  std::vector<double> delta(ranks.size(), 0.0);
  for (size_t i = 0; i < ranks.size(); ++i)
    delta[i] = (total_of(i, {at, common}) / double(common - at)) - (total_of(i, {1, at}) / double(at - 1));
  const double floor = opt.shift_spread_floor * run_ms({1, common}) / double(common - 1);
  for (const auto& [role, idx] : roles) {
    if (idx.size() < 3) continue;  // a pair cannot tell which of the two moved
    std::vector<double> d;
    for (size_t k : idx) d.push_back(delta[k]);
    const double med = median(d), spread = std::max(mad(d, med), floor);
    for (size_t k : idx) z[k] = (delta[k] - med) / spread;
  }
  return z;
}

// A straggler holds its peers back (blame). A rank whose own change is overwhelming (own-shift z
// on its own baseline) qualifies without: a slower rank may hide it (peers wait for that one), and
// it becomes the straggler as soon as the slower one is fixed.
double Run::blame_in(size_t i, Window w) const {
  double blame = 0;
  for (size_t it = w.from; it < w.to && it < ranks[i].blame_by_iteration.size(); ++it)
    blame += ranks[i].blame_by_iteration[it] / 1e6;
  return blame;
}

bool Run::qualifies(size_t i, Window w, double z, bool own_shift) const {
  const double run = run_ms(w);
  if (!repeats(*own_repeats, i, w)) return false;
  if (own_shift && z >= opt.own_shift_z && total_of(i, w) >= opt.own_shift_excess * run) return true;
  return z >= opt.outlier_z && total_of(i, w) >= opt.min_excess * run && blame_in(i, w) >= opt.min_blame * run;
}

// The host-side channel (verdict.hpp): extra GPU idle that repeats, matters and holds peers back.
bool Run::idle_qualifies(size_t i, Window w) const {
  const double run = run_ms(w);
  if (total_of(i, w) <= 0 || blame_in(i, w) < opt.min_blame * run || !repeats(*idle_repeats, i, w)) return false;
  const auto& extra = extra_idle[i];
  return std::accumulate(extra.begin() + long(std::max<size_t>(w.from, 1)), extra.begin() + long(w.to), 0.0) >=
         opt.min_excess * run;
}

// GPU idle per iteration [0, common) beyond its role's median (ms), every rank at once.
void extra_idle_of(Run& run) {
  auto idle = [&](size_t k, size_t it) { return it < run.ranks[k].idle_ms.size() ? run.ranks[k].idle_ms[it] : 0.0; };
  run.extra_idle.assign(run.ranks.size(), std::vector<double>(run.common, 0.0));
  for (const auto& [role, idx] : run.roles)
    for (size_t it = 1; it < run.common; ++it) {
      std::vector<double> peers;
      for (size_t k : idx) peers.push_back(idle(k, it));
      const double med = median(peers);
      for (size_t k : idx) run.extra_idle[k][it] = idle(k, it) - med;
    }
}

// Per-iteration evidence of own time and of GPU idle, and how many iterations the verdict needs.
// `named`: ranks already named, left out of the chance rates (consistency.hpp).
void build_repeats(Run& run, const std::vector<uint8_t>& named = {}) {
  const auto& ranks = run.ranks;
  std::vector<int> role;
  std::vector<std::vector<double>> idle;
  for (const auto& r : ranks) role.push_back(r.role), idle.push_back(r.idle_ms);
  const ConsistencyOptions co{run.opt.consistency_z, run.opt.consistency_floor, run.opt.chance_floor, run.opt.family_alpha};
  run.own_repeats.emplace(run.excess, role, run.v.job_step_ms, run.common, co, named);
  run.idle_repeats.emplace(idle, role, run.v.job_step_ms, run.common, co, named);
  extra_idle_of(run);
  if (!named.empty()) return;  // how much evidence a verdict needs is the first round's
  run.v.judged_iterations = int64_t(run.common > 1 ? run.common - 1 : 0);
  run.v.compared_ranks = int64_t(ranks.size());
  const size_t need = run.own_repeats->min_iterations();
  run.v.needed_iterations = need == SIZE_MAX ? -1 : int64_t(need);
}

// Job-wide windows for everyone (the first, the whole steady run, gives the score); each rank also
// gets the stretches around the change points of its own excess (a small or late slowdown of one
// rank moves no job-wide median).
void choose_windows(Run& run, const std::vector<Window>& windows) {
  const size_t n = run.ranks.size();
  run.best_z.assign(n, -1e300), run.best_w.assign(n, Window{0, 0}), run.by_idle.assign(n, 0);
  for (size_t w = 0; w < windows.size(); ++w) {
    const auto& z = run.judge(windows[w]);
    for (size_t i = 0; i < n; ++i) {
      if (w == 0) run.v.score[i] = z[i];
      run.consider(i, windows[w], z[i]);
    }
  }
  if (run.common <= 1) return;
  const size_t common = run.common;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> steady(run.excess[i].begin() + 1, run.excess[i].end());
    for (const auto& cp : ranks::change_points(steady)) {
      const size_t at = cp.index + 1;
      for (Window w : {Window{at, common}, Window{1, at}}) run.consider(i, w, run.judge(w)[i]);
      if (at >= 3 && common - at >= 2) run.consider(i, Window{at, common}, run.judge_shift(at)[i], true);
    }
  }
}

// Ranks whose own time rose at a job change point against their own baseline (shift_culprits.hpp):
// named on the stretch after it, even where their stage peers changed too (a whole node), and the
// change point's culprits are they.
void name_by_shift(Run& run) {
  ShiftOptions so;
  so.z = run.opt.own_shift_z, so.spread_floor = run.opt.shift_spread_floor, so.of_job = run.opt.culprit_shift;
  so.min_share = run.opt.min_excess;
  const auto found = shift_culprits(run.own, run.v.job_step_ms, run.common, run.job_changes, so);
  std::map<size_t, std::vector<int>> culprits;  // change point -> ranks
  std::map<size_t, size_t> shifted_at;           // change point -> where its culprits' own time shifted
  run.by_shift.assign(run.ranks.size(), 0);
  for (const auto& f : found) {
    culprits[f.change].push_back(run.ranks[f.rank_index].rank);
    auto [it, fresh] = shifted_at.try_emplace(f.change, f.at);
    if (!fresh && it->second != f.at) it->second = run.job_changes[f.change];  // they disagree: keep the job's
    // Named already on its own stretch from before the change: that stands. One that starts later
    // (a second change point, a slow link's, moved its excess most) does not: it changed here.
    const Window was = run.best_w[f.rank_index];
    if (was.to != 0 && (was.from <= f.at || !f.prompt)) continue;
    run.by_shift[f.rank_index] = 1;
    run.best_w[f.rank_index] = Window{f.at, run.common};
    run.best_z[f.rank_index] = was.to != 0 ? std::max(run.best_z[f.rank_index], f.z) : f.z;
    run.by_idle[f.rank_index] = 0;
  }
  for (const auto& [k, ranks] : culprits)
    if (k < run.v.change_points.size()) run.v.change_points[k].culprit_ranks = ranks;
  // The job's step moved an iteration before its culprits' own time (work launched in one step
  // runs in the next): the change, and the phase the costs are measured on, start where they moved.
  for (const auto& [k, at] : shifted_at) {
    if (k >= run.v.change_points.size() || at == run.job_changes[k] || run.ranks.empty()) continue;
    auto& cp = run.v.change_points[k];
    cp.iteration = number(run.ranks.front(), at);
    cp.before_ms = mean_from(run.v.job_step_ms, 1, at), cp.after_ms = mean_from(run.v.job_step_ms, at, run.common);
  }
}

// Ranks of a host slower than their stage peers on other hosts over the whole steady run
// (host_culprits.hpp): named there, where the role median moved with them.
void name_by_host(Run& run) {
  std::vector<int> role;
  std::vector<std::string> host;
  std::vector<double> blame;
  const Window whole{1, run.common};
  for (size_t i = 0; i < run.ranks.size(); ++i)
    role.push_back(run.ranks[i].role), host.push_back(run.ranks[i].host), blame.push_back(run.blame_in(i, whole));
  HostCulpritOptions ho;
  ho.slow_ratio = run.opt.slow_gpu_ratio, ho.min_blame = run.opt.min_blame;
  for (size_t i : slow_host_ranks(run.own, role, host, blame, run.common, run.run_ms(whole), ho))
    if (run.best_w[i].to == 0) run.best_w[i] = whole, run.best_z[i] = run.opt.outlier_z, run.by_idle[i] = 0;
}

// Slow communicators per rank, from find_slow_links.
struct LinkFindings {
  std::map<int, double> ratio;                     // rank -> its slowest communicator against its like
  std::map<int, std::set<std::string>> slow_comms;  // rank -> its slow communicators
};

// The straggler row of rank i, qualified over run.best_w[i]: since when and why.
Straggler make_straggler(Run& run, size_t i, const std::vector<const RankEvidence*>& peers,
                         double median_transfer_ns, LinkFindings& links) {
  const auto& r = run.ranks[i];
  const Window win = run.best_w[i];
  const bool whole = win.from == 1 && win.to == run.common;
  Straggler s;
  s.rank = r.rank, s.host = r.host;
  s.blame_ms = r.blame_ns / 1e6, s.hold_ms = r.hold_ns / 1e6;
  s.excess_ms = run.total_of(i, win);
  s.late_fraction = r.ops > 0 ? r.late / r.ops : 0;
  s.score = run.best_z[i];
  // Named on its extra idle: that series, not its own time (GPU speed spread blurs it), dates it.
  // A change point's culprit is dated by the change its own time made (its role peers may have
  // changed with it, so its excess over them says nothing of when).
  const bool by_shift = i < run.by_shift.size() && run.by_shift[i];
  const size_t on = by_shift ? win.from
                             : onset_before(run.by_idle[i] ? run.extra_idle[i] : run.excess[i], win.from, win.to,
                                            onset_options(run.opt));
  const size_t from = on == SIZE_MAX ? win.from : on;
  if (on != SIZE_MAX) s.onset_iteration = number(r, on);
  s.iterations_after_onset = int64_t(win.to - std::max<size_t>(from, 1));
  std::vector<const RankEvidence*> others;
  for (const auto* p : peers)
    if (p != &r) others.push_back(p);
  CauseInput in;
  in.from = from, in.to = win.to, in.link_ratio = links.ratio[r.rank];
  // Transfer time beyond its role's median, per iteration of its profile.
  in.extra_transfer_ms = (r.transfer_ns - median_transfer_ns) / 1e6 / double(std::max<size_t>(r.step_ms.size(), 1));
  in.excess_ms_per_it = s.excess_ms / double(std::max<size_t>(win.to - std::max<size_t>(from, 1), 1));
  in.own_baseline = by_shift;
  s.cause = cause_of(r, others, in, run.opt, s.evidence, s.own_slowdown);
  s.why = s.evidence;
  // A host delay is dated by its own signal, the extra GPU idle: own time also carries the GPU
  // speed spread, which blurs a small delay's start.
  if (s.cause == Cause::HostDelay && !run.by_idle[i])
    if (const size_t idle_on = onset_before(run.extra_idle[i], win.from, win.to, onset_options(run.opt)); idle_on != SIZE_MAX)
      s.onset_iteration = number(r, idle_on);
  // Evidence, not the cost (that is the what-if replay's, docs/costs.md): each figure says what it
  // is summed over.
  s.evidence = fmt::format("its own time (its steps less its waits in collectives) {:.2f} ms per step above the median "
                           "of its stage peers{}; its peers waited {:.1f} ms on it in all (summed over peers and iterations); it "
                           "arrived last in {:.0f}% of its collectives; ",
                           in.excess_ms_per_it,
                           whole ? "" : fmt::format(" over iterations {}-{}", number(r, win.from), number(r, win.to - 1)),
                           s.blame_ms, 100 * s.late_fraction) +
               s.evidence;
  return s;
}

// Every rank that qualified somewhere, by role, unless a slow link already explains it.
void name_stragglers(Run& run, LinkFindings& links) {
  auto& v = run.v;
  for (const auto& [role, idx] : run.roles) {
    std::vector<const RankEvidence*> peers;
    for (size_t i : idx) peers.push_back(&run.ranks[i]);
    std::vector<double> transfers;
    for (const auto* p : peers) transfers.push_back(p->transfer_ns);
    const double median_transfer_ns = median(transfers);
    for (size_t i : idx) {
      if (run.best_w[i].to == 0) continue;
      Straggler s = make_straggler(run, i, peers, median_transfer_ns, links);
      v.score[i] = std::max(v.score[i], s.score);
      // Its transfers are slow only on communicators already named in slow_links: the link is the
      // finding, not the rank (the contract's "transfers slow for reasons no single rank explains").
      if (s.cause == Cause::SlowLink && explained_by_slow_links(v.slow_links, links.slow_comms[s.rank])) continue;
      v.cause[i] = s.cause;
      v.stragglers.push_back(std::move(s));
    }
  }
}

}  // namespace

Verdict decide(const std::vector<RankEvidence>& ranks, const std::vector<CommEvidence>& comms,
               size_t clean_iterations, const VerdictOptions& opt) {
  Verdict v;
  v.score.assign(ranks.size(), 0);
  v.cause.assign(ranks.size(), Cause::None);
  Run run(ranks, opt, v);
  run.common = job_step_times(ranks, clean_iterations, v);
  LinkFindings links;
  find_slow_links(comms, opt, v, links.ratio, links.slow_comms, ranks.empty() ? std::vector<int64_t>{} : ranks.front().iteration_number);
  excess_own_time(run);
  build_repeats(run);
  const std::vector<Window> windows = job_change_points(run);
  choose_windows(run, windows);
  // The chance of a high iteration is that of a rank that is no straggler: once some are named,
  // their cells leave the rate and everyone is judged again, until no one more is named (each
  // round only adds: a lower rate passes more easily). Bounded: a few stragglers at a time.
  for (int round = 0; round < 3; ++round) {
    std::vector<uint8_t> named(run.ranks.size(), 0);
    size_t count = 0;
    for (size_t i = 0; i < named.size(); ++i) count += named[i] = run.best_w[i].to != 0;
    if (count == 0) break;
    build_repeats(run, named);
    choose_windows(run, windows);
    size_t after = 0;
    for (size_t i = 0; i < named.size(); ++i) after += run.best_w[i].to != 0;
    if (after <= count) break;
  }
  name_by_shift(run);
  if (run.common > 1) name_by_host(run);
  name_stragglers(run, links);
  std::sort(v.stragglers.begin(), v.stragglers.end(), [](auto& a, auto& b) { return a.blame_ms > b.blame_ms; });
  explain_change_points(v);
  return v;
}

}  // namespace collectives
