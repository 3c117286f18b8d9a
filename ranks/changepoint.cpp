#include "ranks/changepoint.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include "ranks/histogram.hpp"

namespace ranks {
namespace {

using common::median;

double segment_median(const std::vector<double>& x, size_t lo, size_t hi) {
  return median(std::vector<double>(x.begin() + long(lo), x.begin() + long(hi)));
}

// The best cut of [lo, hi) if its two sides' medians differ by at least `threshold`, else 0.
size_t best_cut(const std::vector<double>& x, size_t lo, size_t hi, double threshold, const ChangePointOptions& opt) {
  const size_t n = hi - lo;
  if (n < 2 * opt.min_duration) return 0;
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[lo + i];
  double best = -1;
  size_t best_k = 0;
  for (size_t k = opt.min_duration; k + opt.min_duration <= n; ++k) {
    const double ml = prefix[k] / double(k), mr = (prefix[n] - prefix[k]) / double(n - k);
    const double score = std::abs(ml - mr) * std::sqrt(double(k) * double(n - k) / double(n));
    if (score > best) best = score, best_k = k;
  }
  if (best_k == 0) return 0;
  const size_t cut = lo + best_k;
  if (std::abs(segment_median(x, lo, cut) - segment_median(x, cut, hi)) < threshold) return 0;
  return cut;
}

// Binary segmentation, breadth-first with an explicit queue (no recursion), up to max_changes.
void split(const std::vector<double>& x, double threshold, const ChangePointOptions& opt, std::vector<size_t>& cuts) {
  std::deque<std::pair<size_t, size_t>> todo{{0, x.size()}};
  while (!todo.empty() && cuts.size() < opt.max_changes) {
    const auto [lo, hi] = todo.front();
    todo.pop_front();
    const size_t cut = best_cut(x, lo, hi, threshold, opt);
    if (cut == 0) continue;
    cuts.push_back(cut);
    todo.push_back({lo, cut}), todo.push_back({cut, hi});
  }
}

// The shift that counts: min_shift of the level, or noise_factor x the robust noise of x's steps.
double threshold_of(const std::vector<double>& x, const ChangePointOptions& opt) {
  std::vector<double> diffs;
  for (size_t i = 1; i < x.size(); ++i) diffs.push_back(x[i] - x[i - 1]);
  const double dm = median(diffs);
  for (auto& d : diffs) d = std::abs(d - dm);
  const double noise = 1.4826 * median(diffs) / std::sqrt(2.0);
  return std::max(opt.min_shift * std::abs(median(x)), opt.noise_factor * noise);
}

}  // namespace

std::optional<ChangePoint> tail_rise(const std::vector<double>& x, const ChangePointOptions& opt) {
  const size_t n = x.size();
  for (size_t k = opt.min_duration > 1 ? opt.min_duration - 1 : 0; k >= 1; --k) {
    if (n < k + 2 * opt.min_duration) continue;
    const std::vector<double> before(x.begin(), x.end() - long(k)), tail(x.end() - long(k), x.end());
    const double level = median(before), threshold = threshold_of(before, opt);
    // Above every point before it too: one-off slow steps before (noise that reaches that high,
    // 5% of a healthy run's steps 10% slower) say a tail of one or two points as high is noise.
    const double highest = *std::max_element(before.begin(), before.end());
    if (std::all_of(tail.begin(), tail.end(), [&](double v) { return v - level >= threshold && v > highest; }))
      return ChangePoint{n - k, level, median(tail)};
  }
  return std::nullopt;
}

std::vector<ChangePoint> change_points(const std::vector<double>& x, const ChangePointOptions& opt) {
  if (x.size() < 2 * opt.min_duration) return {};
  const double threshold = threshold_of(x, opt);
  std::vector<size_t> cuts;
  split(x, threshold, opt, cuts);
  std::sort(cuts.begin(), cuts.end());
  std::vector<ChangePoint> out;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const size_t lo = i ? cuts[i - 1] : 0, hi = i + 1 < cuts.size() ? cuts[i + 1] : x.size();
    out.push_back({cuts[i], segment_median(x, lo, cuts[i]), segment_median(x, cuts[i], hi)});
  }
  return out;
}

}  // namespace ranks
