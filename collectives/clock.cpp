#include "collectives/clock.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include "ranks/histogram.hpp"
#include "ranks/sat_math.hpp"

namespace collectives {
namespace {

using common::median;

}  // namespace

ClockEdge fit_pair(int a, int b, const std::vector<int64_t>& end_a, const std::vector<int64_t>& end_b) {
  ClockEdge e;
  e.a = a, e.b = b;
  const size_t n = std::min(end_a.size(), end_b.size());
  e.ops = int64_t(n);
  if (n == 0) return e;
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = ranks::diff_d(end_a[i], end_b[i]);  // exact, no int64 overflow
  e.t_ref_ns = double(end_b[n / 2]);
  if (n >= 32) {
    // Drift: least squares through the medians of 8 consecutive bins (robust to stragglers' outliers).
    const size_t bins = 8;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t k = 0; k < bins; ++k) {
      const size_t lo = k * n / bins, hi = (k + 1) * n / bins;
      std::vector<double> dy(d.begin() + long(lo), d.begin() + long(hi)), tx;
      for (size_t i = lo; i < hi; ++i) tx.push_back(double(end_b[i]) - e.t_ref_ns);
      const double x = median(tx), y = median(dy);
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double den = double(bins) * sxx - sx * sx;
    // Only trust a slope over a span long enough to measure it.
    if (den > 0 && ranks::diff_d(end_b[n - 1], end_b[0]) > 1e9) e.drift = (double(bins) * sxy - sx * sy) / den;
  }
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = d[i] - e.drift * (double(end_b[i]) - e.t_ref_ns);
  e.offset_ns = median(r);
  for (auto& x : r) x = std::abs(x - e.offset_ns);
  e.spread_ns = 1.4826 * median(r);
  return e;
}

std::vector<ClockEdge> trusted_edges(const std::vector<ClockEdge>& edges, size_t* left_out,
                                     const std::vector<int64_t>& expected_ns) {
  std::vector<ClockEdge> out;
  size_t dropped = 0;
  auto expected = [&](int r) { return r >= 0 && size_t(r) < expected_ns.size() ? double(expected_ns[size_t(r)]) : 0.0; };
  for (const auto& e : edges) {
    const double off = e.offset_ns - (expected(e.a) - expected(e.b));
    const bool ok = e.ops >= kTieOps ||
                    (e.spread_ns <= kMaxEdgeSpreadNs &&
                     (std::abs(off) <= kNtpErrorNs || (e.spread_ns <= kTightSpreadNs && e.ops >= kLongEdgeOps)));
    if (ok) out.push_back(e);
    else ++dropped;
  }
  if (left_out) *left_out = dropped;
  return out;
}

ClockSolution solve_clocks(int n, const std::vector<ClockEdge>& edges, int reference) {
  ClockSolution s;
  s.offset_ns.assign(size_t(n), 0);
  s.drift.assign(size_t(n), 0);
  s.aligned.assign(size_t(n), 0);
  if (n == 0) return s;
  // All edges are re-expressed at one common reference time.
  // Measured edges only: ties of ranks sharing one clock carry a huge weight and no time of their
  // own; letting them in would move the reference time far from the capture, where any tiny
  // drift turns into a huge offset.
  double tsum = 0, wsum = 0;
  for (const auto& e : edges)
    if (e.ops < kTieOps) tsum += e.t_ref_ns * double(e.ops), wsum += double(e.ops);
  s.t_ref_ns = wsum > 0 ? tsum / wsum : 0;
  struct Adj {
    int other;
    double off, drift, w;  // clock(self) - clock(other)
  };
  std::vector<std::vector<Adj>> adj(static_cast<size_t>(n));
  for (const auto& e : edges) {
    if (e.ops <= 0 || e.a == e.b) continue;
    const double off = e.offset_ns + e.drift * (s.t_ref_ns - e.t_ref_ns);
    // Weight: more ops and a tighter spread mean a better estimate; floor the spread at 1 us.
    const double w = double(e.ops) / std::pow(std::max(e.spread_ns, 1000.0), 2);
    adj[size_t(e.a)].push_back({e.b, off, e.drift, w});
    adj[size_t(e.b)].push_back({e.a, -off, -e.drift, w});
  }
  // Initial values along a BFS tree from the reference, then Gauss-Seidel on the weighted
  // least-squares normal equations (the graph Laplacian), reference held at 0.
  std::queue<int> q;
  q.push(reference);
  s.aligned[size_t(reference)] = 1;
  std::vector<int> order;
  while (!q.empty()) {
    int u = q.front();
    q.pop();
    order.push_back(u);
    for (const auto& a : adj[size_t(u)])
      if (!s.aligned[size_t(a.other)]) {
        s.aligned[size_t(a.other)] = 1;
        s.offset_ns[size_t(a.other)] = s.offset_ns[size_t(u)] - a.off;
        s.drift[size_t(a.other)] = s.drift[size_t(u)] - a.drift;
        q.push(a.other);
      }
  }
  for (int iter = 0; iter < 200; ++iter) {
    double change = 0;
    for (int u : order) {
      if (u == reference) continue;
      double wo = 0, so = 0, sd = 0;
      for (const auto& a : adj[size_t(u)]) {
        wo += a.w;
        so += a.w * (s.offset_ns[size_t(a.other)] + a.off);
        sd += a.w * (s.drift[size_t(a.other)] + a.drift);
      }
      if (wo <= 0) continue;
      const double no = so / wo, nd = sd / wo;
      change = std::max(change, std::abs(no - s.offset_ns[size_t(u)]));
      s.offset_ns[size_t(u)] = no, s.drift[size_t(u)] = nd;
    }
    if (change < 0.5) break;  // sub-ns: converged
  }
  return s;
}

}  // namespace collectives
