#include "compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace straggler::compare {
namespace {

struct Moments {
  double mean = 0, var = 0;
  size_t n = 0;
};
// Mean and variance over `ranks` values (ranks that lack the name count as 0).
Moments moments(const std::vector<double>& v, int32_t ranks) {
  Moments m;
  m.n = size_t(std::max<int32_t>(ranks, int32_t(v.size())));
  if (!m.n) return m;
  double s = 0, s2 = 0;
  for (double x : v) s += x, s2 += x * x;
  m.mean = s / double(m.n);
  m.var = m.n > 1 ? std::max(0.0, (s2 - double(m.n) * m.mean * m.mean) / double(m.n - 1)) : 0;
  return m;
}

std::string change_of(const KernelDelta& d, double ratio) {
  if (d.good_count == 0 && d.bad_count > 0) return "added";
  if (d.bad_count == 0 && d.good_count > 0) return "removed";
  if (d.bad_count > d.good_count * ratio) return "more_frequent";
  if (d.good_count > d.bad_count * ratio) return "fewer";
  const double good_each = d.good_count > 0 ? d.good_ms / d.good_count : 0, bad_each = d.bad_count > 0 ? d.bad_ms / d.bad_count : 0;
  if (bad_each > good_each * ratio) return "slower";
  if (good_each > bad_each * ratio) return "faster";
  return "unchanged";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Per rank own work: time less waiting (ranks without the name: 0).
std::vector<double> own_work(const RunDigest::Kernel& k, size_t n) {
  std::vector<double> o(n, 0.0);
  for (size_t r = 0; r < n && r < k.ms.size(); ++r) o[r] = k.ms[r] - (r < k.wait.size() ? k.wait[r] : 0.0);
  return o;
}

// The change of an NCCL kernel's own work, its transfer estimate (digest_waits). That estimate is
// the least time per launch any member spends, which in a healthy run still holds waits every
// member does (a pipeline's bubbles); when a straggler makes its peers wait, those waits move to
// them and the estimate falls with no transfer getting faster. So only a rise counts (slower
// transfers: a slow link), a fall is taken as no change.
double own_change(bool nccl, double good_own, double bad_own) {
  return nccl ? std::max(0.0, bad_own - good_own) : bad_own - good_own;
}

// The paired change of own work on the rank where it is largest, against the spread of every
// rank's change (1.4826 x MAD: one slow rank among many does not widen it). A GEMM 1.3x slower on
// one rank of 16 moves the mean over ranks by 1/16 of that; the job waits for all of it.
bool rank_change(const std::vector<double>& delta, const std::vector<double>& good_own, const RunDigest& good,
                 const CompareOptions& opt, KernelDelta& d) {
  if (good.rank_ids.size() != delta.size() || delta.empty()) return false;
  std::vector<double> dev(delta.size());
  size_t at = 0;
  for (size_t r = 0; r < delta.size(); ++r)
    if (std::abs(delta[r]) > std::abs(delta[at])) at = r;
  const double mid = median(delta);
  for (size_t r = 0; r < delta.size(); ++r) dev[r] = std::abs(delta[r] - mid);
  const double noise =
      std::max({opt.noise_z * 1.4826 * median(dev), opt.min_relative * good_own[at], opt.min_step_share * good.step_ms});
  if (std::abs(delta[at]) <= noise) return false;
  d.own_delta_ms = delta[at], d.own_rank = good.rank_ids[at], d.noise_ms = noise;
  return true;
}

double mean_of(const std::vector<double>& v, int32_t ranks) { return moments(v, ranks).mean; }

// The change as change_of() names it, of one rank's own work (its launches and time less waiting).
std::string rank_change_of(const RunDigest::Kernel& g, const RunDigest::Kernel& b, const RunDigest& good, int32_t rank, double ratio) {
  const size_t at = size_t(std::find(good.rank_ids.begin(), good.rank_ids.end(), rank) - good.rank_ids.begin());
  auto get = [&](const std::vector<double>& v) { return at < v.size() ? v[at] : 0.0; };
  KernelDelta one;
  one.good_count = get(g.count), one.bad_count = get(b.count);
  one.good_ms = get(g.ms) - get(g.wait), one.bad_ms = get(b.ms) - get(b.wait);
  return change_of(one, ratio);
}

KernelDelta kernel_delta(const std::string& name, const RunDigest& good, const RunDigest& bad, const CompareOptions& opt) {
  static const RunDigest::Kernel none;
  const auto& g = good.kernels.count(name) ? good.kernels.at(name) : none;
  const auto& b = bad.kernels.count(name) ? bad.kernels.at(name) : none;
  KernelDelta d;
  d.name = name, d.nccl = g.nccl | b.nccl;
  d.good_count = mean_of(g.count, good.ranks), d.bad_count = mean_of(b.count, bad.ranks);
  d.good_ms = mean_of(g.ms, good.ranks), d.bad_ms = mean_of(b.ms, bad.ranks), d.delta_ms = d.bad_ms - d.good_ms;
  d.good_wait_ms = mean_of(g.wait, good.ranks), d.bad_wait_ms = mean_of(b.wait, bad.ranks);
  if (d.nccl && d.bad_wait_ms > d.good_wait_ms) d.waiting_for = bad.waiting_for;
  // The mean over ranks, against its standard error (the ranks' spread is the noise).
  const auto go = own_work(g, size_t(good.ranks)), bo = own_work(b, size_t(bad.ranks));
  const Moments gm = moments(g.ms, good.ranks), bm = moments(b.ms, bad.ranks);
  const double se = std::sqrt((gm.n ? gm.var / double(gm.n) : 0) + (bm.n ? bm.var / double(bm.n) : 0));
  d.own_delta_ms = own_change(d.nccl, mean_of(go, good.ranks), mean_of(bo, bad.ranks));
  d.noise_ms = std::max({opt.noise_z * se, opt.min_relative * mean_of(go, good.ranks), opt.min_step_share * good.step_ms});
  d.significant = std::abs(d.own_delta_ms) > d.noise_ms;
  if (good.rank_ids == bad.rank_ids) {  // the same ranks: paired rank by rank
    std::vector<double> delta(good.rank_ids.size());
    for (size_t r = 0; r < delta.size() && r < go.size() && r < bo.size(); ++r) delta[r] = own_change(d.nccl, go[r], bo[r]);
    KernelDelta by_rank = d;
    if (rank_change(delta, go, good, opt, by_rank) && (!d.significant || std::abs(by_rank.own_delta_ms) > std::abs(d.own_delta_ms)))
      d = by_rank, d.significant = 1;
  }
  d.change = change_of(d, opt.ratio);
  if (d.own_rank >= 0) d.change = rank_change_of(g, b, good, d.own_rank, opt.ratio);
  return d;
}

std::vector<KernelDelta> kernel_deltas(const RunDigest& good, const RunDigest& bad, const CompareOptions& opt) {
  std::set<std::string> names;
  for (const auto& [n, k] : good.kernels) names.insert(n);
  for (const auto& [n, k] : bad.kernels) names.insert(n);
  std::vector<KernelDelta> out;
  for (const auto& name : names) out.push_back(kernel_delta(name, good, bad, opt));
  // Own work first: a kernel whose time grew only by waiting never outranks the work it waited for.
  std::sort(out.begin(), out.end(), [](const KernelDelta& a, const KernelDelta& b) {
    if (a.significant != b.significant) return a.significant > b.significant;
    if (std::abs(a.own_delta_ms) != std::abs(b.own_delta_ms)) return std::abs(a.own_delta_ms) > std::abs(b.own_delta_ms);
    return a.name < b.name;
  });
  return out;
}

// Parts matched by part and label (a straggler part is its rank's), in the bad run's order, then
// the good run's parts it lacks.
std::vector<WaterfallDelta> waterfall_deltas(const RunDigest& good, const RunDigest& bad) {
  std::vector<WaterfallDelta> out;
  auto find = [&](const std::string& part, const std::string& label) -> WaterfallDelta* {
    for (auto& d : out)
      if (d.part == part && d.label == label) return &d;
    out.push_back({part, label, 0, 0, 0});
    return &out.back();
  };
  for (const auto& r : bad.waterfall) find(r.part, r.label)->bad_ms += r.ms;
  for (const auto& r : good.waterfall) find(r.part, r.label)->good_ms += r.ms;
  for (auto& d : out) d.delta_ms = d.bad_ms - d.good_ms;
  return out;
}

std::vector<ChangeRow> changes(const RunDigest& good, const RunDigest& bad) {
  std::vector<ChangeRow> out;
  auto status = [](bool in_good, bool in_bad) { return in_good && in_bad ? "both" : in_bad ? "appeared" : "gone"; };
  std::set<std::pair<int32_t, std::string>> gs(good.stragglers.begin(), good.stragglers.end());
  std::set<std::pair<int32_t, std::string>> bs(bad.stragglers.begin(), bad.stragglers.end());
  std::set<std::pair<int32_t, std::string>> all = gs;
  all.insert(bs.begin(), bs.end());
  for (const auto& s : all) out.push_back({"straggler", s.second, status(gs.count(s), bs.count(s)), {s.first}});
  std::map<std::string, std::pair<std::vector<int32_t>, std::vector<int32_t>>> f;
  for (const auto& [what, ranks] : good.findings) f[what].first = ranks;
  for (const auto& [what, ranks] : bad.findings) f[what].second = ranks;
  for (const auto& [what, gb] : f)
    out.push_back({"finding", what, status(!gb.first.empty(), !gb.second.empty()), gb.second.empty() ? gb.first : gb.second});
  return out;
}

}  // namespace

void digest_waits(RunDigest& d) {
  for (auto& [name, k] : d.kernels) {
    if (!k.nccl) continue;
    double least = INFINITY;  // per launch
    for (size_t r = 0; r < k.ms.size() && r < k.count.size(); ++r)
      if (k.count[r] > 0) least = std::min(least, k.ms[r] / k.count[r]);
    k.wait.assign(k.ms.size(), 0.0);
    for (size_t r = 0; r < k.ms.size() && r < k.count.size(); ++r)
      if (k.count[r] > 0) k.wait[r] = std::max(0.0, k.ms[r] - least * k.count[r]);
  }
}

Comparison compare_runs(const RunDigest& good, const RunDigest& bad, const CompareOptions& opt) {
  Comparison c;
  c.good_step_ms = good.step_ms, c.bad_step_ms = bad.step_ms;
  c.step_ratio = good.step_ms > 0 ? bad.step_ms / good.step_ms : 0;
  c.good_mfu = good.mfu, c.bad_mfu = bad.mfu;
  c.kernels = kernel_deltas(good, bad, opt);
  c.waterfall = waterfall_deltas(good, bad);
  c.changes = changes(good, bad);
  return c;
}

}  // namespace straggler::compare
