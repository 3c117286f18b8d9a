#include "consistency.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/stats.hpp"

namespace collectives {

double binomial_tail(size_t n, size_t c, double p) {
  if (c == 0) return 1.0;
  if (c > n || p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  double sum = 0;
  for (size_t k = c; k <= n; ++k) {
    const double log_term = std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1) +
                            double(k) * std::log(p) + double(n - k) * std::log1p(-p);
    sum += std::exp(log_term);
  }
  return std::min(1.0, sum);
}

Consistency::Consistency(const std::vector<std::vector<double>>& values, const std::vector<int>& role,
                         const std::vector<double>& job_step_ms, size_t common, const ConsistencyOptions& opt,
                         const std::vector<uint8_t>& named)
    : ranks_(values.size()), opt_(opt) {
  z_.assign(values.size(), std::vector<double>(common, 0.0));
  std::map<int, std::vector<size_t>> roles;
  for (size_t i = 0; i < values.size(); ++i) roles[role[i]].push_back(i);
  auto at = [&](size_t i, size_t it) { return it < values[i].size() ? values[i][it] : 0.0; };
  for (size_t it = 1; it < common; ++it) {
    std::vector<double> residual(values.size(), 0.0), spread(values.size(), -1.0);
    for (const auto& [r, idx] : roles) {
      std::vector<double> v;
      for (size_t i : idx) v.push_back(at(i, it));
      const double med = common::median(v);
      const double m = idx.size() >= 3 ? common::mad_sigma(v, med) : -1.0;
      for (size_t i : idx) residual[i] = at(i, it) - med, spread[i] = m;
    }
    const double pooled = common::mad_sigma(residual, 0.0);
    const double floor = opt.floor_share * (it < job_step_ms.size() ? job_step_ms[it] : 0.0);
    for (size_t i = 0; i < values.size(); ++i) {
      const double s = std::max(spread[i] >= 0 ? spread[i] : pooled, floor);
      z_[i][it] = s > 0 ? residual[i] / s : 0.0;
      if (i >= named.size() || !named[i]) sorted_.push_back(z_[i][it]);
    }
  }
  std::sort(sorted_.begin(), sorted_.end());
}

double Consistency::chance(double z) const {
  const double t = std::clamp(z, opt_.high_z, opt_.floor_cap_z);
  const auto above = sorted_.end() - std::lower_bound(sorted_.begin(), sorted_.end(), t);
  const double seen = sorted_.empty() ? 0.0 : double(above) / double(sorted_.size());
  return std::clamp(seen, opt_.null_floor * (opt_.high_z / t) * (opt_.high_z / t), 0.5);
}

bool Consistency::passes_at(size_t c, size_t n, double z, double tests, double levels) const {
  return c >= kLeastRepeats && double(ranks_) * std::max(1.0, tests) * std::max(1.0, levels) * binomial_tail(n, c, chance(z)) <= opt_.alpha;
}

bool Consistency::passes(size_t i, size_t from, size_t to, double tests) const {
  from = std::max<size_t>(from, 1), to = std::min(to, z_[i].size());
  if (to <= from) return false;
  std::vector<double> mine;  // its high levels, highest first
  for (size_t it = from; it < to; ++it)
    if (z_[i][it] >= opt_.high_z) mine.push_back(std::min(z_[i][it], opt_.floor_cap_z));
  std::sort(mine.rbegin(), mine.rend());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  for (double t : mine) {
    size_t c = 0;
    for (size_t it = from; it < to; ++it) c += std::min(z_[i][it], opt_.floor_cap_z) >= t;
    if (passes_at(c, to - from, t, tests, double(mine.size()))) return true;
  }
  return false;
}

size_t Consistency::min_iterations() const {
  for (size_t n = kLeastRepeats; n <= 1000; ++n)
    if (passes_at(n, n, opt_.floor_cap_z)) return n;
  return SIZE_MAX;
}

}  // namespace collectives
