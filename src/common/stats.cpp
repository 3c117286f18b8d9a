#include "common/stats.hpp"

#include <cmath>

namespace common {

double mad_sigma(const std::vector<double>& v, double center) {
  std::vector<double> d;
  d.reserve(v.size());
  for (double x : v) d.push_back(std::abs(x - center));
  return kMadToSigma * median(d);
}

int64_t nearest_rank_quantile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

double interpolated_quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

Distribution Distribution::of(std::vector<double> v) {
  Distribution d;
  if (v.empty()) return d;
  // Running variance, updated per value as var_n = var_{n-1} (n-1)/n + (x - mean_n)^2/(n-1): the
  // population variance; the sample stddev rescales it by n/(n-1).
  double var = 0;
  d.min = v.front(), d.max = v.front();
  for (double x : v) {
    ++d.count;
    d.sum += x;
    d.min = std::min(d.min, x), d.max = std::max(d.max, x);
    if (d.count > 1) {
      const double n = double(d.count), t = x - d.sum / n;
      var = var * (n - 1) / n + t * t / (n - 1);
    }
  }
  d.mean = d.sum / double(d.count);
  d.stddev = d.count > 1 ? std::sqrt(var * double(d.count) / double(d.count - 1)) : 0.0;
  std::sort(v.begin(), v.end());
  d.p50 = interpolated_quantile(v, 0.5), d.p90 = interpolated_quantile(v, 0.9), d.p99 = interpolated_quantile(v, 0.99);
  return d;
}

}  // namespace common
