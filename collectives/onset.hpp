// Onset of a rank's slowdown (verdict.hpp, "Since when"): the first iteration with a value above
// onset_level x its slow level (median of the upper half of its positive values) from which the
// share of such iterations is at least onset_stay x the share in the later half of the slow
// stretch, traced back at the rank's whole slow level.
#pragma once
#include <cstddef>
#include <vector>

namespace collectives {

struct OnsetOptions {
  double onset_level = 0.5, onset_stay = 0.9;
};

// The onset of a series judged over iterations [from, to); SIZE_MAX when none.
size_t onset_before(const std::vector<double>& excess, size_t from, size_t to, const OnsetOptions& opt);

}  // namespace collectives
