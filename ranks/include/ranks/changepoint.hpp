// Change points in a series (step time per iteration): where its level shifts and stays shifted.
// Binary segmentation: the split maximising the standardised mean difference is kept when
//  * both sides last at least `min_duration` points (a one-off slow step is not a change), and
//  * the medians of the two sides differ by at least max(min_shift * overall median,
//    noise_factor * robust noise), robust noise = 1.4826 * MAD of first differences / sqrt(2);
// then both sides are searched again.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

namespace ranks {

struct ChangePointOptions {
  size_t min_duration = 3;
  double min_shift = 0.05;     // 5% of the median level
  double noise_factor = 4.0;
  // At most this many change points (the largest shifts first, breadth-first): bounds the work at
  // O(n x max_changes) and the stack at O(1) whatever a profile holds (a hostile one may hold
  // millions of tiny iterations in a staircase).
  size_t max_changes = 32;
};

struct ChangePoint {
  size_t index = 0;            // first point of the new level
  double before = 0, after = 0;  // medians of the segments on either side
};

std::vector<ChangePoint> change_points(const std::vector<double>& x, const ChangePointOptions& opt = {});

// A rise over the last few points, fewer than min_duration (a fault that starts in the capture's
// last iterations has no three after it): every one of them above the median before by the
// threshold that side's own noise sets and above every point before (a one-off slow step as high
// says such a tail is noise), with at least 2 x min_duration points before; the longest
// such tail. change_points() leaves it out (a one-off slow step is no change); the caller says how
// few points it had.
std::optional<ChangePoint> tail_rise(const std::vector<double>& x, const ChangePointOptions& opt = {});

}  // namespace ranks
