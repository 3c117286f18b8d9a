#include "compare.hpp"

#include <algorithm>
#include <cmath>
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

std::vector<KernelDelta> kernel_deltas(const RunDigest& good, const RunDigest& bad, const CompareOptions& opt) {
  std::set<std::string> names;
  for (const auto& [n, k] : good.kernels) names.insert(n);
  for (const auto& [n, k] : bad.kernels) names.insert(n);
  static const RunDigest::Kernel none;
  std::vector<KernelDelta> out;
  for (const auto& name : names) {
    const auto g = good.kernels.count(name) ? good.kernels.at(name) : none;
    const auto b = bad.kernels.count(name) ? bad.kernels.at(name) : none;
    KernelDelta d;
    d.name = name, d.nccl = g.nccl | b.nccl;
    const Moments gm = moments(g.ms, good.ranks), bm = moments(b.ms, bad.ranks);
    d.good_count = moments(g.count, good.ranks).mean, d.bad_count = moments(b.count, bad.ranks).mean;
    d.good_ms = gm.mean, d.bad_ms = bm.mean, d.delta_ms = bm.mean - gm.mean;
    const double se = std::sqrt((gm.n ? gm.var / double(gm.n) : 0) + (bm.n ? bm.var / double(bm.n) : 0));
    d.noise_ms = std::max({opt.noise_z * se, opt.min_relative * gm.mean, opt.min_step_share * good.step_ms});
    d.significant = std::abs(d.delta_ms) > d.noise_ms;
    d.change = change_of(d, opt.ratio);
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const KernelDelta& a, const KernelDelta& b) {
    if (a.significant != b.significant) return a.significant > b.significant;
    return std::abs(a.delta_ms) != std::abs(b.delta_ms) ? std::abs(a.delta_ms) > std::abs(b.delta_ms) : a.name < b.name;
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
