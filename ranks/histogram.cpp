#include "ranks/histogram.hpp"

#include <algorithm>
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

}  // namespace ranks
