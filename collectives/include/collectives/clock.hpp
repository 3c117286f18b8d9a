// Clock alignment from collective end times.
// Members of one collective finish within microseconds of each other (none can finish before the
// last arrives, and the data then moves in lock step), so for ranks a, b of one communicator the
// difference of their recorded end times, op by op, is their clock difference plus small noise.
// Each communicator yields pairwise estimates (member vs the communicator's reference member);
// a weighted least-squares fit over the graph of all communicators gives each rank's offset and
// linear drift relative to a reference rank.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ranks/sat_math.hpp"

namespace collectives {

// Weight of an edge that ties two ranks known to share one clock (ranks read from one file).
constexpr int64_t kTieOps = int64_t(1) << 40;

// Observation: clock(a) - clock(b) = offset_ns + drift * (t - t_ref_ns), from `ops` matched ops.
struct ClockEdge {
  int a = 0, b = 0;
  double offset_ns = 0, drift = 0;  // drift in ns per ns
  double t_ref_ns = 0;               // time the offset refers to (wall clock of b)
  double spread_ns = 0;              // robust spread (1.4826 MAD) of the differences around the fit
  int64_t ops = 0;
};

// Fits one pair from matched end times (same length; ns on each rank's own wall clock):
// median offset, and drift from the medians of up to 8 time bins when there are >= 32 ops.
ClockEdge fit_pair(int a, int b, const std::vector<int64_t>& end_a, const std::vector<int64_t>& end_b);

struct ClockSolution {
  std::vector<double> offset_ns;    // per rank, at t_ref_ns; reference rank = 0
  std::vector<double> drift;        // per rank, ns per ns
  std::vector<uint8_t> aligned;     // 0 when the rank is not connected to the reference
  double t_ref_ns = 0;
  // Correction: true_time = t - (offset + drift * (t - t_ref)), saturated at the int64 limits
  // (fits of hostile profiles can give any offset; a NaN one corrects nothing).
  int64_t correct(int rank, int64_t t) const {
    const double o = offset_ns[size_t(rank)] + drift[size_t(rank)] * (double(t) - t_ref_ns);
    return ranks::sat_sub(t, ranks::sat_round(o));
  }
};

// The edges worth solving with. Members of one collective end within microseconds, so a pair
// whose differences spread wider than kMaxEdgeSpreadNs was matched wrongly, not measured; an
// offset beyond kNtpErrorNs (NTP keeps hosts within ms) is believed only from a tight
// (kTightSpreadNs) and long (kLongEdgeOps) fit. Same-clock ties always stay. `left_out` counts the rest.
constexpr double kMaxEdgeSpreadNs = 100'000, kNtpErrorNs = 20'000'000, kTightSpreadNs = 20'000;
constexpr int64_t kLongEdgeOps = 64;
// `expected_ns[r]`: rank r's clock as the hosts' coarse alignment found it (host_clocks.hpp; empty:
// all 0): an offset is measured against the difference of the two ranks' expected ones, since a
// host clock far off that its collectives already placed is evidence, not an implausible fit.
std::vector<ClockEdge> trusted_edges(const std::vector<ClockEdge>& edges, size_t* left_out = nullptr,
                                     const std::vector<int64_t>& expected_ns = {});

// n ranks; edges over ranks 0..n-1; `reference` gets offset 0. Deterministic.
ClockSolution solve_clocks(int n, const std::vector<ClockEdge>& edges, int reference);

}  // namespace collectives
