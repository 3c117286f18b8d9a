// Onset of a rank's slowdown (verdict.hpp, "Since when").
#include "onset.hpp"

#include <algorithm>

#include "common/stats.hpp"

namespace collectives {
namespace {

using common::median;

// Its level once it is slow: the median of the upper half of the positive values in [from, to);
// 0 when none is positive.
double slow_level(const std::vector<double>& v, size_t from, size_t to) {
  std::vector<double> positive;
  for (size_t i = from; i < to && i < v.size(); ++i)
    if (v[i] > 0) positive.push_back(v[i]);
  std::sort(positive.begin(), positive.end());
  return median(std::vector<double>(positive.begin() + long(positive.size() / 2), positive.end()));
}

// Share of iterations in [from, to) whose value is at least `level`.
double high_share(const std::vector<double>& v, size_t from, size_t to, double level) {
  size_t high = 0;
  for (size_t i = from; i < to; ++i) high += v[i] >= level;
  return to > from ? double(high) / double(to - from) : 0.0;
}

// The first high iteration (>= onset_level x its slow level) from which the share of high
// iterations up to `to` is at least onset_stay x the share over the later half of the stretch
// from `first` on: a slowdown every iteration dates from its first, a periodic one (a GC pause
// every other iteration) from its first occurrence, and a lone spike before a later onset is not
// the onset. `first`: where high iterations are looked for.
size_t first_sustained(const std::vector<double>& v, size_t first, size_t to, double half, const OnsetOptions& opt) {
  size_t start = SIZE_MAX;
  for (size_t i = first; i < to && start == SIZE_MAX; ++i)
    if (v[i] >= half) start = i;
  if (start == SIZE_MAX) return SIZE_MAX;
  const double tail = high_share(v, start + (to - start) / 2, to, half);
  // A periodic slowdown (high in under 3 of 4 iterations) gets one high iteration of slack: its
  // share from a given start swings with the phase (every 3rd iteration: 5 of 13 from its first
  // occurrence, 3 of 7 in the later half). A lasting one gets none: a hiccup three iterations
  // before a steady onset is not its start.
  const bool periodic = tail < 0.75;
  for (size_t i = std::max<size_t>(first, 1); i < to; ++i)
    if (v[i] >= half && high_share(v, i, to, half) + (periodic ? 1.0 / double(to - i) : 0.0) >= opt.onset_stay * tail)
      return i;
  return start;
}

size_t onset_index(const std::vector<double>& blame, const OnsetOptions& opt) {
  const double level = slow_level(blame, 1, blame.size());
  if (level <= 0) return SIZE_MAX;
  return first_sustained(blame, 1, blame.size(), opt.onset_level * level, opt);
}

// The onset of a rank's excess that is judged over [from, to): its level there, traced back to the
// first iteration from which it is sustained (first_sustained). A window that opens at a later
// fault's change point must not move an earlier onset of this rank to it.
}  // namespace

size_t onset_before(const std::vector<double>& excess, size_t from, size_t to, const OnsetOptions& opt) {
  std::vector<double> in(excess.begin(), excess.begin() + long(to));
  std::fill(in.begin(), in.begin() + long(std::min(from, to)), 0.0);
  const size_t in_window = onset_index(in, opt);
  if (in_window == SIZE_MAX) return SIZE_MAX;
  // Traced back at its level in the window, its largest value left out when it has three or more:
  // a short window's level is a few iterations' worth, and one hiccup among them would set it
  // too high.
  std::vector<double> level_of(excess.begin() + long(std::min(from, to)), excess.begin() + long(to));
  if (std::count_if(level_of.begin(), level_of.end(), [](double v) { return v > 0; }) >= 3)
    level_of.erase(std::max_element(level_of.begin(), level_of.end()));
  const double half = opt.onset_level * slow_level(level_of, 0, level_of.size());
  const size_t back = first_sustained(excess, 1, to, half, opt);
  return back < in_window ? back : in_window;
}

}  // namespace collectives
