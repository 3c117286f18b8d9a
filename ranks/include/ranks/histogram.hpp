// Distributions of durations: exact per-rank summaries and fixed log-spaced histograms whose
// bins are the same everywhere, so histograms from different processes merge exactly (sum).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common/stats.hpp"

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

}  // namespace ranks
