// Root-cause findings across ranks; definitions in include/collectives/root_causes.hpp.
#include "collectives/root_causes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/stats.hpp"

namespace collectives {
namespace {

using common::median;
using ranks::Finding;
using ranks::RankFinding;

// Median of v over the steady iteration indexes [1, min(clean, size)), times scale.
double steady_median(const std::vector<double>& v, size_t clean, double scale) {
  std::vector<double> s;
  for (size_t i = 1; i < std::min(clean, v.size()); ++i) s.push_back(v[i] * scale);
  return median(s);
}

double job_step_ms(const std::vector<RankEvidence>& ranks, size_t clean) {
  std::vector<double> steps;
  for (const auto& r : ranks) steps.push_back(steady_median(r.step_ms, clean, 1));
  return median(steps);
}

std::map<int, std::vector<size_t>> by_role(const std::vector<RankEvidence>& ranks) {
  std::map<int, std::vector<size_t>> roles;
  for (size_t i = 0; i < ranks.size(); ++i) roles[ranks[i].role].push_back(i);
  return roles;
}

double cost_of(const RankEvidence& r, Finding f) {
  for (const auto& x : r.findings)
    if (x.finding == f) return x.cost_ms_per_step;
  return 0;
}

// f (a finding of ranks[i]) sets it apart from the peers of its role `idx`.
bool distinguishing(const std::vector<RankEvidence>& ranks, const std::vector<size_t>& idx, size_t i, const RankFinding& f,
                    double step, const RootCauseOptions& opt) {
  std::vector<double> theirs;
  for (size_t j : idx)
    if (j != i) theirs.push_back(cost_of(ranks[j], f.finding));
  return f.cost_ms_per_step >= opt.distinguish_ratio * median(theirs) && f.cost_ms_per_step >= opt.distinguish_min * step;
}

}  // namespace

void add_imbalance_findings(std::vector<RankEvidence>& ranks, size_t clean, const RootCauseOptions& opt) {
  const double step = job_step_ms(ranks, clean);
  if (step <= 0) return;
  std::vector<double> compute(ranks.size()), wait(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i)
    compute[i] = steady_median(ranks[i].compute_ms, clean, 1), wait[i] = steady_median(ranks[i].wait_by_iteration, clean, 1e-6);
  std::vector<std::pair<size_t, RankFinding>> rows;
  for (const auto& [role, idx] : by_role(ranks)) {
    if (idx.size() < 2) continue;
    for (size_t i : idx) {
      std::vector<double> pc, pw;
      for (size_t j : idx)
        if (j != i) pc.push_back(compute[j]), pw.push_back(wait[j]);
      const double extra = compute[i] - median(pc), less_wait = median(pw) - wait[i];
      if (extra < opt.imbalance_excess * step || less_wait < opt.imbalance_wait * extra) continue;
      const std::string why = fmt::format(
          "compute {:.2f} ms per step against {:.2f} ms on the peers of its role, which wait {:.2f} ms per step in "
          "collectives against its {:.2f} ms: they idle at the barrier for it",
          compute[i], median(pc), median(pw), wait[i]);
      // A finding of its own that costs it most of the extra compute (tiny kernels) is the cause:
      // the imbalance is its consequence, told there rather than as a second finding.
      RankFinding* cause = nullptr;
      for (auto& f : ranks[i].findings)
        if (f.cost_ms_per_step >= opt.imbalance_explained * extra && distinguishing(ranks, idx, i, f, step, opt) &&
            (!cause || f.cost_ms_per_step > cause->cost_ms_per_step))
          cause = &f;
      if (cause) cause->evidence += "; so its peers wait: " + why;
      else rows.push_back({i, {ranks[i].rank, Finding::CommImbalance, extra / (opt.imbalance_excess * step), extra, why}});
    }
  }
  for (auto& [i, f] : rows) {
    auto& mine = ranks[i].findings;
    mine.push_back(std::move(f));
    std::stable_sort(mine.begin(), mine.end(), [](auto& a, auto& b) { return a.finding < b.finding; });
  }
}

void tie_findings(Verdict& v, const std::vector<RankEvidence>& ranks, const RootCauseOptions& opt) {
  const double step = job_step_ms(ranks, SIZE_MAX);
  const auto roles = by_role(ranks);
  for (auto& s : v.stragglers) {
    auto me = std::find_if(ranks.begin(), ranks.end(), [&](const RankEvidence& r) { return r.rank == s.rank; });
    if (me == ranks.end()) continue;
    std::vector<const RankFinding*> mine;
    const size_t i = size_t(me - ranks.begin());
    for (const auto& f : me->findings)
      if (distinguishing(ranks, roles.at(me->role), i, f, step, opt)) mine.push_back(&f);
    std::stable_sort(mine.begin(), mine.end(), [](auto* a, auto* b) { return a->cost_ms_per_step > b->cost_ms_per_step; });
    if (mine.empty()) continue;
    for (const auto* f : mine) s.findings.push_back(f->finding);
    const RankFinding* lead = mine.front();
    if (s.cause == Cause::HostDelay) {
      auto host = std::find_if(mine.begin(), mine.end(), [](auto* f) { return ranks::host_side(f->finding); });
      if (host != mine.end()) s.cause_detail = (*host)->finding, lead = *host;
    }
    std::string also;
    for (const auto* f : mine)
      if (f != lead) also += (also.empty() ? "" : ", ") + std::string(ranks::finding_name(f->finding));
    s.evidence += fmt::format("; set apart by {}: {}{}", ranks::finding_name(lead->finding), lead->evidence,
                              also.empty() ? "" : " (also: " + also + ")");
  }
}

std::vector<FindingSummary> summarize_findings(const std::vector<RankFinding>& rows, size_t total_ranks,
                                               const RootCauseOptions& opt) {
  std::map<Finding, std::vector<const RankFinding*>> by;
  for (const auto& r : rows) by[r.finding].push_back(&r);
  std::vector<FindingSummary> out;
  for (const auto& [f, list] : by) {
    FindingSummary s;
    s.finding = f;
    std::vector<double> costs;
    const RankFinding* top = list.front();
    for (const auto* r : list) {
      s.ranks.push_back(r->rank), costs.push_back(r->cost_ms_per_step);
      if (r->cost_ms_per_step > top->cost_ms_per_step) top = r;
    }
    std::sort(s.ranks.begin(), s.ranks.end());
    s.ranks.erase(std::unique(s.ranks.begin(), s.ranks.end()), s.ranks.end());
    s.cost_ms_per_step = top->cost_ms_per_step, s.median_cost_ms_per_step = median(costs);
    s.evidence = top->evidence, s.unit = top->unit;
    s.shared = total_ranks > 0 && double(s.ranks.size()) > opt.shared_share * double(total_ranks);
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.cost_ms_per_step > b.cost_ms_per_step; });
  return out;
}

void charge_findings(std::vector<FindingSummary>& rows, const Verdict& v, double step_ms) {
  std::vector<double> steps;
  for (double s : v.job_step_ms)
    if (s > 0) steps.push_back(s);
  const double step = step_ms > 0 ? step_ms : median(steps);
  for (auto& f : rows) {
    f.own_ms_per_step = f.cost_ms_per_step;
    double replay = 0;
    bool any = false;
    for (const auto& s : v.stragglers) {
      const ranks::Finding lead = s.cause_detail != ranks::Finding::None ? s.cause_detail
                                  : s.findings.empty()                   ? ranks::Finding::None
                                                                         : s.findings.front();
      if (lead != f.finding || !std::isfinite(s.cost_ms_per_step)) continue;
      if (std::find(f.ranks.begin(), f.ranks.end(), s.rank) == f.ranks.end()) continue;
      replay += s.cost_ms_per_step, any = true;
    }
    if (any) f.cost_ms_per_step = replay, f.cost_basis = "replay";
    if (f.unit == "step" && step > 0) f.cost_pct = 100 * f.cost_ms_per_step / step;
  }
  std::stable_sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.cost_ms_per_step > b.cost_ms_per_step; });
}

}  // namespace collectives
