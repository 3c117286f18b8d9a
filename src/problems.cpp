#include "problems.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "analyses/what_if.hpp"
#include "collectives/problems.hpp"
#include "common/stats.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "json_writer.hpp"
#include "rows.hpp"

namespace straggler {
namespace c = collectives;
using common::printable;

namespace {

// Two stalls are a pattern only where both steps stand this far above a clean step (a GC pause or
// a checkpoint costs tens of percent of the step; noise in healthy runs stays within a few).
constexpr double kTwoStallsAbove = 1.2;

// The step the what-if replay gives with exactly these ranks fixed (a fix_problem row, or the
// fix_all row when they are every straggler), and the step as measured; NaN when not replayed.
std::pair<double, double> replayed(const CrossRankResults& x, const std::vector<int32_t>& ranks) {
  if (!x.post_mortem || x.post_mortem->what_if.empty()) return {NAN, NAN};
  const auto& rows = x.post_mortem->what_if;
  for (const auto& r : rows)
    if ((r.kind == "fix_problem" || r.kind == "fix_all") && r.ranks == ranks) return {rows.front().step_ms, r.step_ms};
  return {rows.front().step_ms, NAN};
}

// Stragglers sharing a host: one problem, priced by fixing them all; each rank's share in
// proportion to its own part of the waterfall (they add up to the cost).
Problem host_problem(const CrossRankResults& x, const c::StragglerGroup& g, const std::map<std::string, size_t>& per_host) {
  const auto& v = x.verdict;
  Problem p;
  p.place_kind = "host", p.place_name = g.host, p.hosts = {g.host};
  p.host_ranks = per_host.count(g.host) ? per_host.at(g.host) : 0;
  std::map<std::string, size_t> causes;
  double parts = 0;
  bool all_parts = true;
  for (size_t si : g.members) {
    const auto& s = v.stragglers[si];
    p.ranks.push_back(s.rank), p.stragglers.push_back(si);
    ++causes[c::cause_name(s.cause)];
    if (s.onset_iteration >= 0 && (p.onset_iteration < 0 || s.onset_iteration < p.onset_iteration))
      p.onset_iteration = s.onset_iteration, p.iterations_after_onset = s.iterations_after_onset;
    all_parts &= std::isfinite(s.cost_ms_per_step) && s.cost_ms_per_step > 0;
    if (std::isfinite(s.cost_ms_per_step)) parts += std::max(s.cost_ms_per_step, 0.0);
  }
  p.cause = std::max_element(causes.begin(), causes.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  const auto [measured, fixed] = replayed(x, p.ranks);
  if (std::isfinite(fixed) && measured > 0) {
    p.cost_ms_per_step = std::max(measured - fixed, 0.0), p.cost_pct = 100 * p.cost_ms_per_step / measured;
    p.step_ms_without = fixed;
    for (size_t si : g.members) {
      const auto& s = v.stragglers[si];
      const double w = all_parts && parts > 0 ? s.cost_ms_per_step / parts : 1.0 / double(g.members.size());
      p.shares.push_back({s.rank, p.cost_ms_per_step * w});
    }
  }
  const auto& first = v.stragglers[g.members.front()];
  p.evidence = first.why;
  return p;
}

Problem rank_problem(const c::Straggler& s, size_t si) {
  Problem p;
  p.cause = c::cause_name(s.cause), p.place_kind = "rank", p.place_name = fmt::format("rank {}", s.rank);
  p.ranks = {s.rank}, p.stragglers = {si};
  if (!s.host.empty()) p.hosts = {s.host};
  p.onset_iteration = s.onset_iteration, p.iterations_after_onset = s.iterations_after_onset;
  p.cost_ms_per_step = s.cost_ms_per_step, p.cost_pct = s.cost_pct;
  if (std::isfinite(s.cost_ms_per_step)) p.shares = {{s.rank, s.cost_ms_per_step}};
  p.evidence = s.why;
  if (s.cause_detail != ranks::Finding::None) p.finding = ranks::finding_name(s.cause_detail);
  return p;
}

// The ranks that stopped by themselves: crashed (capture ended first) or hung; who was left waiting.
std::vector<Problem> stopped_problems(const CrossRankResults& x) {
  std::set<int32_t> crashed, hung, blocked, in_launch;
  int64_t iteration = -1;
  for (const auto& d : x.desync) {
    blocked.insert(d.blocked_ranks.begin(), d.blocked_ranks.end());
    if (!d.root_cause) continue;
    in_launch.insert(d.stopped_in_launch.begin(), d.stopped_in_launch.end());
    for (int32_t r : d.missing_ranks)
      (std::count(d.crashed_ranks.begin(), d.crashed_ranks.end(), r) ? crashed : hung).insert(r);
    if (d.iteration >= 0 && (iteration < 0 || d.iteration < iteration)) iteration = d.iteration;
  }
  for (int32_t r : crashed) hung.erase(r);
  std::vector<Problem> out;
  for (auto [kind, set] : {std::pair<const char*, std::set<int32_t>*>{"crash", &crashed}, {"hang", &hung}}) {
    if (set->empty()) continue;
    Problem p;
    p.cause = kind, p.place_kind = set->size() == 1 ? "rank" : "ranks";
    p.ranks.assign(set->begin(), set->end());
    p.place_name = fmt::format("rank{} {}", p.ranks.size() == 1 ? "" : "s", fmt::join(p.ranks, ", "));
    for (int32_t b : blocked)
      if (!set->count(b)) p.blocked_ranks.push_back(b);
    p.onset_iteration = iteration;
    const bool by_launch = std::any_of(set->begin(), set->end(), [&](int32_t r) { return in_launch.count(r); });
    p.stopped_in_launch = std::string(kind) == "crash" && by_launch;
    p.evidence = std::string(kind) != "crash" ? "it never reached a collective its peers waited in, while its capture went on"
                 : by_launch ? "a launch of its own never finished, in an op no peer is missing from (its GPU work stopped with it); "
                               "the others stayed blocked in a collective it never joined"
                             : "its capture ended first; the others stayed blocked in a collective it never joined";
    out.push_back(std::move(p));
  }
  return out;
}

// The period of stall episodes (their first slow steps), when they recur as a collector that runs
// every so many allocations, or a checkpoint every N steps, does: three or more, on one arithmetic
// progression that runs on to the end of the window [.., end),
// each place on it a stall; one place may hold a stall the launch queue absorbed in part (a step
// above `elevated` only). Hiccups at random seldom fall on such a progression. Two episodes are a
// pattern only where both steps stand `strong` above the rest and the progression leaves the
// window after them (a period of 4 from iteration 4 in a capture of 10 shows two stalls only);
// two slow stretches with a clean place on their progression are none.
std::optional<size_t> recurring_period(const std::vector<size_t>& episodes, const std::vector<double>& job, size_t end,
                                       double elevated, double strong) {
  if (episodes.size() < 2) return std::nullopt;
  if (episodes.size() == 2 && (job[episodes[0]] < strong || job[episodes[1]] < strong)) return std::nullopt;
  const size_t may_absorb = episodes.size() == 2 ? 0 : 1;
  size_t period = SIZE_MAX;
  for (size_t k = 1; k < episodes.size(); ++k) period = std::min(period, episodes[k] - episodes[k - 1]);
  if (period < 2) return std::nullopt;
  // Exactly on it: a collector run every so many allocations of a steady step, a checkpoint every N
  // steps, keep their step; random hiccups given a step of slack fit a progression too often.
  const size_t slack = 0;
  size_t next = 0, absorbed = 0;  // next episode to meet
  for (size_t t = episodes.front(); t < end; t += period) {
    if (next < episodes.size() && episodes[next] + slack >= t && episodes[next] <= t + slack) {
      t = episodes[next++];  // stay on the progression the stalls keep
      continue;
    }
    bool high = false;
    for (size_t u = t >= slack ? t - slack : 0; u <= t + slack && u < end; ++u) high |= job[u] > elevated;
    if (!high || ++absorbed > may_absorb) return std::nullopt;
  }
  if (next != episodes.size()) return std::nullopt;  // an episode off the progression
  return period;
}

// The stall problem's evidence: its slow steps against the clean level, where and how often.
std::string stall_evidence(const Problem& p, const std::vector<size_t>& slow, size_t steps, const std::vector<double>& job,
                           const std::vector<int64_t>* numbers) {
  std::vector<double> slow_ms;
  for (size_t i : slow) slow_ms.push_back(job[i]);
  std::vector<std::string> at;
  for (size_t k = 0; k < slow.size() && k < 6; ++k)
    at.push_back(std::to_string(numbers && slow[k] < numbers->size() ? (*numbers)[slow[k]] : int64_t(slow[k])));
  return fmt::format("{} of {} steps take {:.2f} ms (their median) against {:.2f} ms (iterations {}{}), every ~{:.0f} "
                     "iterations; no rank stands out: each rank's stall holds every other up in turn{}",
                     slow.size(), steps, common::median(slow_ms), p.step_ms_without, fmt::join(at, ", "), slow.size() > at.size() ? ", ..." : "",
                     p.period_iterations, p.finding.empty() ? "" : "; most ranks show " + p.finding);
}

// Stalls that recur on every rank (Python GC without gc.freeze(), a checkpoint, a dataloader that
// starves every rank): the job waits for each rank's stall in turn, so whole steps are slow while
// no rank stands out. Seen in the job's step (median over ranks) of the last phase: steps far above
// the level of a clean step (its lower quartile; 3 robust sigmas of the clean cluster and 5% of it,
// and past halfway to the slow steps), at least twice, at most three steps in four (then the phase
// itself is slow: a change point's business). What fixing them buys is what those
// steps cost beyond the steps without one: the mean step since the first stall less the median of
// the steps without a stall (the run's own counterfactual); the period from when they happen. The root-cause finding
// most ranks share (gc_pause, ...) names the cause where there is one.
std::optional<Problem> stall_problem(const CrossRankResults& x, const std::vector<RankRow>& rows) {
  const auto& job = x.verdict.job_step_ms;
  const size_t common = size_t(std::max<int64_t>(x.verdict.judged_iterations, 0)) + 1;
  if (common < 4 || job.size() < common) return std::nullopt;
  size_t from = 1;  // the last phase: after the job's last change point
  const std::vector<int64_t>* numbers = x.iteration_number.empty() ? nullptr : &x.iteration_number.front();
  for (const auto& cp : x.verdict.change_points)
    for (size_t i = 1; numbers && i < common && i < numbers->size(); ++i)
      if ((*numbers)[i] == cp.iteration) from = std::max(from, i);
  std::vector<double> steps(job.begin() + long(from), job.begin() + long(common));
  if (steps.size() < 4) return std::nullopt;
  // The level of a step without a stall: the lower quartile, and the spread of the steps at or
  // below the median about it (stalls every other step make half the steps slow: the median is no
  // clean level then).
  std::vector<double> sorted = steps;
  std::sort(sorted.begin(), sorted.end());
  const double base = common::interpolated_quantile(sorted, 0.25);
  // The spread of the clean cluster only (steps within 5% of that level): a stall's partial step
  // in the lower half would widen it.
  std::vector<double> lower;
  for (double v : sorted)
    if (v <= 1.05 * base) lower.push_back(v);
  if (lower.size() < 3) lower.assign(sorted.begin(), sorted.begin() + long(sorted.size() / 2 + 1));
  const double bar = base + std::max(3 * common::mad_sigma(lower, base), 0.05 * base);
  std::vector<size_t> slow;
  std::vector<double> clean;
  double mean = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    mean += steps[i] / double(steps.size());
    if (steps[i] > bar) slow.push_back(from + i);
    else clean.push_back(steps[i]);
  }
  if (slow.size() < 2 || slow.size() * 4 > steps.size() * 3 || clean.empty()) return std::nullopt;
  // A stall's step stands far above the rest; a step that only brushes the bar (a stall's spill
  // into the next step, noise) is not one: slow means past halfway to the slow steps' median.
  std::vector<double> high;
  for (size_t i : slow) high.push_back(job[i]);
  const double half = (base + common::median(high)) / 2;
  std::erase_if(slow, [&](size_t i) { return job[i] <= half; });
  clean.clear();
  for (size_t i = 0; i < steps.size(); ++i)
    if (!std::binary_search(slow.begin(), slow.end(), from + i)) clean.push_back(steps[i]);
  if (slow.size() < 2) return std::nullopt;
  // Episodes: a stall late in a step spills into the next one, so slow steps in a row are one.
  std::vector<size_t> episodes;
  for (size_t k = 0; k < slow.size(); ++k)
    if (k == 0 || slow[k] != slow[k - 1] + 1) episodes.push_back(slow[k]);
  const double elevated = 1.02 * base;
  const auto period = recurring_period(episodes, job, common, elevated, kTwoStallsAbove * base);
  if (!period) return std::nullopt;
  // A place on the progression that is only elevated is a stall the launch queue absorbed in part:
  // not a step without one (in the clean median it would hide part of every stall's cost).
  for (size_t t = episodes.front(); t < common; t += *period)
    if (!std::binary_search(slow.begin(), slow.end(), t) && job[t] > elevated && clean.size() > 1)
      std::erase(clean, job[t]);
  const double without = common::median(clean), cost = mean - without;
  // Under 5%: hiccups at random fit a progression now and then (2 of 60 noisy healthy runs at 3-4%).
  if (cost < 0.05 * without) return std::nullopt;
  Problem p;
  p.cause = "stall", p.place_kind = "every_rank", p.place_name = "every rank";
  p.onset_iteration = numbers && slow.front() < numbers->size() ? (*numbers)[slow.front()] : int64_t(slow.front());
  p.iterations_after_onset = int64_t(common - slow.front());
  p.period_iterations = double(*period);
  // Its cost since its onset (docs/costs.md), as every problem's: the steps before the first stall
  // had none to fix.
  double since = 0;
  for (size_t i = slow.front(); i < common; ++i) since += job[i] / double(common - slow.front());
  p.cost_ms_per_step = since - without, p.cost_pct = 100 * (since - without) / since, p.step_ms_without = without;
  std::map<ranks::Finding, std::set<int32_t>> on;
  for (const auto& f : x.findings)
    if (f.finding == ranks::Finding::GcPause || f.finding == ranks::Finding::CpuBottleneck || f.finding == ranks::Finding::GpuBubbles)
      on[f.finding].insert(f.rank);
  size_t most = 0;
  for (const auto& [f, r] : on)
    if (r.size() > most && r.size() * 2 >= rows.size()) most = r.size(), p.finding = ranks::finding_name(f);
  for (const auto& r : rows) p.ranks.push_back(r.rank);
  std::sort(p.ranks.begin(), p.ranks.end());
  p.evidence = stall_evidence(p, slow, steps.size(), job, numbers);
  return p;
}

}  // namespace

std::vector<Problem> build_problems(const CrossRankResults& x, const std::vector<RankRow>& rows) {
  std::map<std::string, size_t> per_host;
  for (const auto& r : rows)
    if (!r.host.empty()) ++per_host[r.host];
  std::vector<Problem> out = stopped_problems(x);
  const size_t stopped = out.size();
  std::vector<uint8_t> grouped(x.verdict.stragglers.size(), 0);
  for (const auto& g : c::group_stragglers(x.verdict)) {
    for (size_t si : g.members) grouped[si] = 1;
    out.push_back(host_problem(x, g, per_host));
  }
  for (size_t si = 0; si < x.verdict.stragglers.size(); ++si)
    if (!grouped[si]) out.push_back(rank_problem(x.verdict.stragglers[si], si));
  if (auto st = stall_problem(x, rows)) out.push_back(std::move(*st));
  for (const auto& l : x.verdict.slow_links) {
    Problem p;
    p.cause = "slow_link", p.place_kind = "hosts", p.hosts = l.hosts;
    p.place_name = l.hosts.empty() ? fmt::format("{}", fmt::join(l.communicators, ", ")) : fmt::format("{}", fmt::join(l.hosts, ", "));
    p.cost_ms_per_step = l.cost_ms_per_step, p.cost_pct = l.cost_pct;
    p.evidence = c::slow_link_evidence(l);
    // Slow from the first steady iteration (-1): dated there, as a straggler slow throughout is;
    // as far as the capture shows, that is when it began.
    const auto& nums = x.iteration_number.empty() ? std::vector<int64_t>{} : x.iteration_number.front();
    const int64_t onset = l.onset_iteration >= 0 ? l.onset_iteration : nums.size() >= 3 ? nums[1] : -1;
    if (onset >= 0) {
      p.onset_iteration = onset;
      p.iterations_after_onset = int64_t(std::count_if(nums.begin(), nums.end(), [&](int64_t n) { return n >= onset; }));
    }
    out.push_back(std::move(p));
  }
  // What costs the job under 1% of its step is no problem to lead with (a rank that caught a few
  // hiccups in a noisy healthy run): it stays in `stragglers` and `slow_links`.
  std::erase_if(out, [](const Problem& p) { return std::isfinite(p.cost_pct) && p.cost_pct < 1.0; });
  // Stragglers, slow links and stalls date themselves by the iterations' numbers (markers may count
  // from 37); a problem's onset counts from the first iteration in the capture, as a desync's does.
  const auto* nums = x.iteration_number.empty() ? nullptr : &x.iteration_number.front();
  for (size_t k = stopped; k < out.size(); ++k) {
    auto& p = out[k];
    if (p.onset_iteration < 0) continue;
    p.onset_number = p.onset_iteration;
    if (nums) {
      const auto at = std::find_if(nums->begin(), nums->end(), [&](int64_t n) { return n >= p.onset_number; });
      p.onset_iteration = int64_t(at - nums->begin());
    }
  }
  for (size_t k = 0; k < stopped; ++k) out[k].onset_number = out[k].onset_iteration;
  const bool marked = std::all_of(rows.begin(), rows.end(), [](const RankRow& r) { return r.iteration_source == "nvtx"; });
  for (auto& p : out) p.unit = marked ? "step" : "repeating unit";
  auto cost = [](const Problem& p) { return std::isfinite(p.cost_ms_per_step) ? p.cost_ms_per_step : -1.0; };
  std::stable_sort(out.begin() + long(stopped), out.end(), [&](const Problem& a, const Problem& b) { return cost(a) > cost(b); });
  return out;
}

std::string problems_json(const std::vector<Problem>& problems) {
  JsonWriter j;
  auto num = [&](double v) -> JsonWriter& { return std::isfinite(v) ? j.value(v) : j.null(); };
  auto ints = [&](const std::vector<int32_t>& v) {
    j.begin_array();
    for (int32_t r : v) j.value(int64_t(r));
    j.end_array();
  };
  j.begin_array();
  for (const auto& p : problems) {
    j.begin_object().key("cause").value(p.cause);
    j.key("place").begin_object().key("kind").value(p.place_kind).key("name").value(printable(p.place_name)).end_object();
    j.key("ranks"), ints(p.ranks);
    j.key("hosts").begin_array();
    for (const auto& h : p.hosts) j.value(printable(h));
    j.end_array();
    if (p.cause == "crash" || p.cause == "hang") j.key("blocked_ranks"), ints(p.blocked_ranks);
    j.key("onset_iteration");
    p.onset_iteration >= 0 ? j.value(p.onset_iteration) : j.null();
    j.key("iterations_after_onset").value(p.iterations_after_onset);
    j.key("period_iterations"), num(p.period_iterations);
    j.key("cost_ms_per_step"), num(p.cost_ms_per_step);
    j.key("cost_pct"), num(p.cost_pct);
    j.key("step_ms_without"), num(p.step_ms_without);
    j.key("unit").value(p.unit);
    j.key("shares").begin_array();
    for (const auto& s : p.shares) j.begin_object().key("rank").value(int64_t(s.rank)).key("ms_per_step").value(s.ms_per_step).end_object();
    j.end_array().key("finding");
    p.finding.empty() ? j.null() : j.value(p.finding);
    j.key("evidence").value(printable(p.evidence)).end_object();
  }
  return j.end_array().str();
}

std::string how_stopped(const std::vector<Problem>& problems) {
  size_t crashed = 0;
  bool in_launch = false;
  std::set<int32_t> blocked;
  int64_t iteration = -1;
  for (const auto& p : problems) {
    if (p.cause != "crash" && p.cause != "hang") continue;
    if (p.cause == "crash") crashed += p.ranks.size(), in_launch |= p.stopped_in_launch;
    blocked.insert(p.blocked_ranks.begin(), p.blocked_ranks.end());
    iteration = p.onset_iteration;  // the same for both: the earliest root row's
  }
  // Without a capture end of its own (one file per host holds several processes) a death looks the same.
  const char* who = crashed == 1 ? "it" : "they";
  std::string out = crashed == 0 ? ": it stopped while its capture went on (a hang, or a death its capture outlived)"
                    : in_launch  ? fmt::format(": {} died (a launch of {} own never finished, the others stayed blocked)", who,
                                               crashed == 1 ? "its" : "their")
                                 : fmt::format(": {} crashed (its capture ended first, the others stayed blocked)", who);
  if (iteration >= 0) out += fmt::format(" in iteration {}", iteration);
  if (!blocked.empty()) out += fmt::format("; {} rank{} left waiting", blocked.size(), blocked.size() == 1 ? "" : "s");
  return out;
}

std::string problem_headline(const Problem& p) {
  std::string where = printable(p.place_name);
  if (p.place_kind == "host")
    where += fmt::format(": {}{} (ranks {})", p.ranks.size(), p.host_ranks ? fmt::format(" of its {} GPUs", p.host_ranks) : " GPUs",
                         fmt::join(p.ranks, ", "));
  std::string s = fmt::format("{} {}", where, p.cause);
  if (p.place_kind == "every_rank")
    s = fmt::format("every rank: host stalls{}", p.finding.empty() ? "" : " (" + p.finding + ")");
  if (p.onset_number >= 0) s += fmt::format(" since iteration {}", p.onset_number);
  if (std::isfinite(p.period_iterations)) s += fmt::format(", every {:.0f} iterations", p.period_iterations);
  if (std::isfinite(p.cost_ms_per_step)) s += fmt::format(", costs {:.2f} ms per {} ({:.1f}%)", p.cost_ms_per_step, p.unit, p.cost_pct);
  return s;
}

void print_problem(std::ostream& os, const Problem& p) {
  os << "  PROBLEM " << problem_headline(p) << "\n";
  if (std::isfinite(p.cost_ms_per_step) && p.place_kind == "every_rank") {
    os << fmt::format("    costs the job: {:.2f} ms per {} ({:.1f}% of it): the mean {} since the first stall less the median "
                      "of those without a stall ({:.2f} ms)\n", p.cost_ms_per_step, p.unit, p.cost_pct, p.unit, p.step_ms_without);
  } else if (std::isfinite(p.cost_ms_per_step)) {
    std::vector<std::string> shares;
    for (const auto& s : p.shares) shares.push_back(fmt::format("rank {} {:.2f}", s.rank, s.ms_per_step));
    os << fmt::format("    costs the job: {:.2f} ms per {} ({:.1f}% of it): what fixing the whole problem buys (the "
                      "replay: {:.2f} ms without it); each rank's share in ms per {}: {}\n",
                      p.cost_ms_per_step, p.unit, p.cost_pct, p.step_ms_without, p.unit, fmt::join(shares, ", "));
  }
  if (p.onset_number >= 0)
    os << fmt::format("    since:         iteration {} (judged on {} iteration{} from there)\n", p.onset_number,
                      p.iterations_after_onset, p.iterations_after_onset == 1 ? "" : "s");
  os << fmt::format("    why:           {}{}\n", p.cause, p.evidence.empty() ? "" : ": " + printable(p.evidence));
  if (p.place_kind == "host")
    os << "    next:          check the host as a whole (nvidia-smi -q for clocks, power and thermal throttling; "
          "dmesg for Xid and PCIe errors), then drain it and rerun\n";
  if (p.place_kind == "every_rank")
    os << "    next:          py-spy dump or the host timeline around a slow step; for Python GC, gc.freeze() after "
          "the model is built and gc.collect() on every rank at the same step\n";
}

}  // namespace straggler
