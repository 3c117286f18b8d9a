#include "collectives/decompose.hpp"

#include <algorithm>

#include "ranks/sat_math.hpp"

namespace collectives {

OpTiming decompose(const std::vector<int64_t>& arrival, const std::vector<int64_t>& end) {
  OpTiming t;
  const size_t n = std::min(arrival.size(), end.size());
  if (n == 0) return t;
  t.first_arrival = t.last_arrival = arrival[0];
  t.second_arrival = INT64_MIN;
  t.last = 0;
  t.end_max = end[0];
  for (size_t i = 1; i < n; ++i) {
    // Ties go to the lower member index: deterministic.
    if (arrival[i] > t.last_arrival) {
      t.second_arrival = t.last_arrival;
      t.last_arrival = arrival[i];
      t.last = int(i);
    } else {
      t.second_arrival = std::max(t.second_arrival, arrival[i]);
    }
    t.first_arrival = std::min(t.first_arrival, arrival[i]);
    t.end_max = std::max(t.end_max, end[i]);
  }
  if (t.second_arrival == INT64_MIN) t.second_arrival = t.last_arrival;
  // Clock-corrected times of untrusted profiles may lie anywhere in int64: saturate.
  using ranks::sat_sub;
  t.skew = sat_sub(t.last_arrival, t.first_arrival);
  t.transfer = std::max<int64_t>(0, sat_sub(t.end_max, t.last_arrival));
  t.hold = sat_sub(t.last_arrival, t.second_arrival);
  __int128 blame = 0;  // n terms of up to 2^64 each: exact in 128 bits for any n that fits memory
  for (size_t i = 0; i < n; ++i) blame += __int128(t.last_arrival) - arrival[i];
  t.blame = ranks::sat_from_wide(blame);
  return t;
}


}  // namespace collectives
