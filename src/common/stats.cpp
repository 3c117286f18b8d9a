#include "common/stats.hpp"

#include <boost/accumulators/accumulators.hpp>
#include <boost/accumulators/statistics/count.hpp>
#include <boost/accumulators/statistics/max.hpp>
#include <boost/accumulators/statistics/mean.hpp>
#include <boost/accumulators/statistics/min.hpp>
#include <boost/accumulators/statistics/stats.hpp>
#include <boost/accumulators/statistics/sum.hpp>
#include <boost/accumulators/statistics/variance.hpp>

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
  // The streaming moments from Boost.Accumulators (the design's choice for them): immediate
  // variance (the population variance, updated per value), rescaled to the sample stddev.
  namespace acc = boost::accumulators;
  acc::accumulator_set<double, acc::stats<acc::tag::count, acc::tag::sum, acc::tag::min, acc::tag::max, acc::tag::mean,
                                          acc::tag::variance>>
      a;
  for (double x : v) a(x);
  d.count = uint64_t(acc::count(a));
  d.sum = acc::sum(a), d.min = (acc::min)(a), d.max = (acc::max)(a), d.mean = acc::mean(a);
  d.stddev = d.count > 1 ? std::sqrt(acc::variance(a) * double(d.count) / double(d.count - 1)) : 0.0;
  // Quantiles exact (order statistics), not Boost's P-square estimates.
  std::sort(v.begin(), v.end());
  d.p50 = interpolated_quantile(v, 0.5), d.p90 = interpolated_quantile(v, 0.9), d.p99 = interpolated_quantile(v, 0.99);
  return d;
}

}  // namespace common
