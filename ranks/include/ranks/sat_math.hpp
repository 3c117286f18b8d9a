// Integer time arithmetic that cannot overflow (issue 8, D10). Profiles are untrusted: the reader
// only promises that every time of a RankTimeline lies in [-2^61, 2^61] (so a difference of two
// of them fits int64), but wall clocks (utc_epoch_ns + t), clock-corrected times, differences of
// those, and sums over millions of rows do not. These saturate at the int64 limits instead of
// wrapping (undefined behaviour): a hostile profile gives a huge but ordered value, never UB.
// Results are exact whenever they fit, so real profiles see no change.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ranks {

inline constexpr int64_t kSatMax = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kSatMin = std::numeric_limits<int64_t>::min();

// An exact 128-bit value clamped into int64.
constexpr int64_t sat_from_wide(__int128 v) { return v > kSatMax ? kSatMax : v < kSatMin ? kSatMin : int64_t(v); }

constexpr int64_t sat_add(int64_t a, int64_t b) { return sat_from_wide(__int128(a) + b); }
constexpr int64_t sat_sub(int64_t a, int64_t b) { return sat_from_wide(__int128(a) - b); }
constexpr int64_t sat_mul(int64_t a, int64_t b) { return sat_from_wide(__int128(a) * b); }
constexpr int64_t sat_abs(int64_t a) { return a == kSatMin ? kSatMax : a < 0 ? -a : a; }
// |a - b|, saturated.
constexpr int64_t abs_diff(int64_t a, int64_t b) { return sat_abs(sat_sub(a, b)); }
// a - b as a double, computed exactly first (double(a) - double(b) would lose the ns of wall
// clocks ~2^60, and a - b in int64 may overflow).
inline double diff_d(int64_t a, int64_t b) { return double(__int128(a) - b); }

// A double rounded to the nearest int64, clamped (a plain cast of an out-of-range double is UB);
// NaN gives `nan_value`.
inline int64_t sat_round(double x, int64_t nan_value = 0) {
  if (std::isnan(x)) return nan_value;
  if (x >= 9223372036854775807.0) return kSatMax;  // 2^63: the first double out of range
  if (x <= -9223372036854775808.0) return kSatMin;
  return int64_t(x >= 0 ? x + 0.5 : x - 0.5);  // |x| < 2^63: + 0.5 stays in range or rounds to 2^63
}

// The same, truncated toward zero (what a plain int64_t(x) cast does for in-range x).
inline int64_t sat_trunc(double x, int64_t nan_value = 0) {
  if (std::isnan(x)) return nan_value;
  if (x >= 9223372036854775807.0) return kSatMax;
  if (x <= -9223372036854775808.0) return kSatMin;
  return int64_t(x);
}

}  // namespace ranks
