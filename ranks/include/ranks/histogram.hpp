// Distributions of durations: exact per-rank summaries and fixed log-spaced histograms whose
// bins are the same everywhere, so histograms from different processes merge exactly (sum).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace ranks {

class LogHistogram {
 public:
  static constexpr int kBinsPerDecade = 10;
  static constexpr int kDecades = 9;  // 100 ns .. 100 s
  // Bin 0 holds [0, 100 ns); bin kBins-1 holds >= 100 s.
  static constexpr int kBins = kBinsPerDecade * kDecades + 2;

  void add(int64_t ns);
  void merge(const LogHistogram& other);
  // Lower edge of each bin in ns (integer, identical on every machine); edges()[0] == 0.
  static const std::array<int64_t, kBins>& edges();
  uint64_t total() const;
  // Approximate quantile (q in [0,1]): the geometric middle of the bin holding it, so within
  // ~12% (one tenth of a decade); exact merges make it the same on any number of processes.
  double quantile(double q) const;

  std::array<uint64_t, kBins> counts{};
};

// Exact summary of a sample (quantiles by linear interpolation between order statistics, as
// numpy's default); count/sum/min/max/mean/stddev via Boost.Accumulators.
struct Distribution {
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0, mean = 0, stddev = 0, p50 = 0, p90 = 0, p99 = 0;
  static Distribution of(std::vector<double> values);
};

// Median of a sample (mean of the two middle values for an even count; 0 when empty).
template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + long(m), v.end());
  if (v.size() % 2) return v[m];
  const T lo = *std::max_element(v.begin(), v.begin() + long(m));
  if constexpr (std::is_integral_v<T>) return T((__int128(lo) + v[m]) / 2);  // the sum may pass int64
  else return T((lo + v[m]) / 2);
}

}  // namespace ranks
