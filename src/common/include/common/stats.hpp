// Statistics of samples, in one place: median, MAD, quantiles and a summary. Which tool for what:
//  * streaming moments (count, sum, min, max, mean, variance): Boost.Accumulators
//    (Distribution::of), the natural tool and the design's;
//  * order statistics (median, MAD, quantiles): our own, exact (Boost's median and quantiles are
//    P-square estimates, and the tool promises exact numbers);
//  * duration histograms merged across ranks: ranks::LogHistogram (integer bin edges, so a merge
//    over any number of processes is exact).
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace common {

// Median (mean of the two middle values for an even count; 0 when empty).
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

// Scale of the normal distribution per unit of median absolute deviation.
inline constexpr double kMadToSigma = 1.4826;

// Median absolute deviation about `center`, scaled to a normal sigma (kMadToSigma x MAD).
double mad_sigma(const std::vector<double>& v, double center);

// The q-quantile as the order statistic nearest to q (n - 1) (v is reordered; 0 when empty).
int64_t nearest_rank_quantile(std::vector<int64_t>& v, double q);

// The q-quantile of sorted values by linear interpolation between order statistics (numpy's
// default); 0 when empty.
double interpolated_quantile(const std::vector<double>& sorted, double q);

// Summary of a sample: moments by Boost.Accumulators in the order the values come (immediate
// variance), quantiles interpolated between exact order statistics.
struct Distribution {
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0, mean = 0, stddev = 0, p50 = 0, p90 = 0, p99 = 0;
  static Distribution of(std::vector<double> values);
};

}  // namespace common
