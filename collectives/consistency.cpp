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
                         const std::vector<double>& job_step_ms, size_t common, const ConsistencyOptions& opt)
    : ranks_(values.size()), opt_(opt) {
  z_.assign(values.size(), std::vector<double>(common, 0.0));
  std::map<int, std::vector<size_t>> roles;
  for (size_t i = 0; i < values.size(); ++i) roles[role[i]].push_back(i);
  auto at = [&](size_t i, size_t it) { return it < values[i].size() ? values[i][it] : 0.0; };
  size_t cells = 0, high = 0;
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
      ++cells, high += z_[i][it] >= opt.high_z;
    }
  }
  p0_ = std::clamp(cells ? double(high) / double(cells) : 0.0, opt.null_floor, 0.5);
}

size_t Consistency::high(size_t i, size_t from, size_t to) const {
  size_t c = 0;
  for (size_t it = std::max<size_t>(from, 1); it < std::min(to, z_[i].size()); ++it) c += z_[i][it] >= opt_.high_z;
  return c;
}

bool Consistency::passes(size_t c, size_t n, double tests) const {
  return c > 0 && double(ranks_) * std::max(1.0, tests) * binomial_tail(n, c, p0_) <= opt_.alpha;
}

size_t Consistency::min_iterations() const {
  for (size_t n = 1; n <= 1000; ++n)
    if (passes(n, n)) return n;
  return SIZE_MAX;
}

}  // namespace collectives
