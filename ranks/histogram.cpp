#include "ranks/histogram.hpp"

#include <algorithm>
#include <boost/accumulators/accumulators.hpp>
#include <boost/accumulators/statistics/count.hpp>
#include <boost/accumulators/statistics/max.hpp>
#include <boost/accumulators/statistics/mean.hpp>
#include <boost/accumulators/statistics/min.hpp>
#include <boost/accumulators/statistics/stats.hpp>
#include <boost/accumulators/statistics/sum.hpp>
#include <boost/accumulators/statistics/variance.hpp>
#include <cmath>

namespace ranks {

const std::array<int64_t, LogHistogram::kBins>& LogHistogram::edges() {
  static const std::array<int64_t, kBins> e = [] {
    std::array<int64_t, kBins> a{};
    // Integer edges 100 * 10^(i/10) ns, computed once: every process gets identical bins.
    for (int i = 0; i <= kBinsPerDecade * kDecades; ++i)
      a[size_t(i) + 1] = int64_t(std::llround(100.0 * std::pow(10.0, double(i) / kBinsPerDecade)));
    return a;
  }();
  return e;
}

void LogHistogram::add(int64_t ns) {
  const auto& e = edges();
  auto it = std::upper_bound(e.begin() + 1, e.end(), ns);
  counts[size_t(it - e.begin() - 1)]++;
}

void LogHistogram::merge(const LogHistogram& other) {
  for (int i = 0; i < kBins; ++i) counts[size_t(i)] += other.counts[size_t(i)];
}

uint64_t LogHistogram::total() const {
  uint64_t t = 0;
  for (auto c : counts) t += c;
  return t;
}

double LogHistogram::quantile(double q) const {
  const uint64_t n = total();
  if (n == 0) return 0;
  const auto& e = edges();
  const double target = std::clamp(q, 0.0, 1.0) * double(n - 1);
  uint64_t seen = 0;
  for (int b = 0; b < kBins; ++b) {
    seen += counts[size_t(b)];
    if (double(seen) > target) {
      if (b == 0) return double(e[1]) / 2;
      if (b == kBins - 1) return double(e[size_t(b)]);
      return std::sqrt(double(e[size_t(b)]) * double(e[size_t(b) + 1]));
    }
  }
  return double(e[kBins - 1]);
}

Distribution Distribution::of(std::vector<double> v) {
  namespace acc = boost::accumulators;
  Distribution d;
  if (v.empty()) return d;
  acc::accumulator_set<double, acc::stats<acc::tag::count, acc::tag::sum, acc::tag::min, acc::tag::max,
                                          acc::tag::mean, acc::tag::variance>>
      a;
  for (double x : v) a(x);
  d.count = acc::count(a);
  d.sum = acc::sum(a);
  d.min = acc::min(a);
  d.max = acc::max(a);
  d.mean = acc::mean(a);
  d.stddev = v.size() > 1 ? std::sqrt(acc::variance(a) * double(v.size()) / double(v.size() - 1)) : 0.0;
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    double pos = p * double(v.size() - 1);
    size_t lo = size_t(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
  };
  d.p50 = q(0.5), d.p90 = q(0.9), d.p99 = q(0.99);
  return d;
}

}  // namespace ranks
