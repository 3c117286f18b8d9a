#include "collectives/scaling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "collectives/bandwidth.hpp"
#include "collectives/nccl_kernel.hpp"
#include "common/stats.hpp"

namespace collectives {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Ring steps of one collective on n ranks (NCCL's ring: 2(n-1) for all-reduce, n-1 otherwise):
// the latency term of the cost model grows with them.
double ring_steps(const std::string& coll, int n) {
  if (coll == "SendRecv") return 1;
  return std::max(1.0, coll == "AllReduce" ? 2.0 * (n - 1) : double(n - 1));
}

std::string size_words(int64_t b) {
  if (b >= (int64_t(1) << 30)) return fmt::format("{:g} GiB", double(b) / double(int64_t(1) << 30));
  if (b >= (1 << 20)) return fmt::format("{:g} MiB", double(b) / double(1 << 20));
  if (b >= (1 << 10)) return fmt::format("{:g} KiB", double(b) / 1024.0);
  return fmt::format("{} B", b);
}

// The family is part of the key: a TP and a DP all-reduce of one size and group size run on
// different links.
std::string series_of(const ScalingGroup& g) {
  if (g.bytes <= 0) return g.collective + " " + g.family;
  return g.collective + " " + size_words(int64_t(1) << size_bucket(g.bytes)) + " " + g.family;
}

double bus_bytes(const ScalingGroup& g) {
  if (g.bytes <= 0) return kNaN;
  const int64_t s = operation_bytes(collective_of_name(g.collective), g.bytes, g.group_size);
  return s < 0 ? kNaN : double(s) * bus_factor(collective_of_name(g.collective), g.group_size);
}

// t = c + a x (x: ring steps), least squares with c, a >= 0.
struct Fit {
  double c = 0, a = 0;
  double at(double x) const { return c + a * x; }
};

Fit fit_line(const std::vector<double>& x, const std::vector<double>& t) {
  const double n = double(x.size());
  double sx = 0, st = 0, sxx = 0, sxt = 0;
  for (size_t i = 0; i < x.size(); ++i) sx += x[i], st += t[i], sxx += x[i] * x[i], sxt += x[i] * t[i];
  Fit f;
  const double d = n * sxx - sx * sx;
  if (d > 0) f.a = (n * sxt - sx * st) / d, f.c = (st - f.a * sx) / n;
  if (d <= 0 || f.a < 0) f.a = 0, f.c = st / n;
  if (f.c < 0) f.c = 0, f.a = sxx > 0 ? sxt / sxx : 0;
  return f;
}

struct Point {
  const ScalingPoint* p;
  topology::Span span;
  double x = 0, bus = kNaN;
};

// The model's time (ms) at a point with `nodes` and `pods` (the fabric's cost; NaN without one or
// without a size).
double fabric_ms(const ScalingOptions& o, const Point& q, int nodes, int pods, topology::Bound* bound = nullptr) {
  if (!o.fabric || !(q.bus >= 0) || nodes < 1) return kNaN;
  const auto c = topology::collective_cost(*o.fabric, q.p->group.collective, topology::CostAlgo::Ring, q.bus,
                                           q.p->group.group_size, nodes, std::max(pods, 1));
  if (bound) *bound = c.bound;
  return c.time_us / 1e3;
}

// The larger misfit; NaN (a zero model or time) counts as no fit.
double worse(double worst, double d) { return d <= worst ? worst : std::isnan(d) ? HUGE_VAL : d; }

struct Judged {
  double expected = kNaN;
  bool fits = false, latency = false;
  std::string note;
};

// The model's extrapolation to point k from the earlier points `F` (smaller scales, no cliff).
Judged extrapolate(const ScalingOptions& o, const std::vector<Point>& pts, const std::vector<size_t>& F, size_t k) {
  Judged j;
  const Point& q = pts[k];
  if (F.empty()) return j;
  int maxN = 0, maxP = 0;
  for (size_t i : F) maxN = std::max(maxN, pts[i].span.nodes), maxP = std::max(maxP, pts[i].span.pods);
  std::vector<double> xs, ts;
  for (size_t i : F) xs.push_back(pts[i].x), ts.push_back(pts[i].p->group.time_ms);
  double worst = 0;
  if (o.fabric && q.bus >= 0) {
    // The fabric's shape, calibrated to the smaller scales, with no class beyond theirs crossed.
    std::vector<double> r;
    for (size_t i : F) r.push_back(pts[i].p->group.time_ms / fabric_ms(o, pts[i], pts[i].span.nodes, pts[i].span.pods));
    const double calib = common::median(r);
    for (double v : r) worst = worse(worst, std::abs(v / calib - 1));
    topology::Bound b{};
    j.expected = calib * fabric_ms(o, q, maxN == 1 ? 1 : q.span.nodes, std::min(q.span.pods, std::max(maxP, 1)), &b);
    j.latency = b == topology::Bound::Latency;
  } else if (std::set<double>(xs.begin(), xs.end()).size() == 1) {
    // One smaller scale (maybe several runs of it): at most the growth of a wholly latency-bound
    // ring (time ~ steps).
    const double t0 = common::median(ts);
    for (double t : ts) worst = worse(worst, std::abs(t / t0 - 1));
    j.expected = t0 * std::max(1.0, q.x / xs[0]);
    j.latency = false;
  } else {
    const Fit f = fit_line(xs, ts);
    for (size_t i = 0; i < xs.size(); ++i) worst = worse(worst, std::abs(ts[i] / f.at(xs[i]) - 1));
    j.expected = f.at(q.x);
    // Latency-bound where the smaller scales already were: the step term passed the rest at the
    // largest of them (extrapolated, a steep fit would call any series latency-bound).
    j.latency = f.a * *std::max_element(xs.begin(), xs.end()) > f.c;
  }
  j.fits = worst <= o.fit_tolerance;
  if (!j.fits)
    j.note = fmt::format("the smaller scales do not fit the model (off by up to {:.0f}%): no verdict", 100 * worst);
  return j;
}

// Why point k left the model: the first of a slow link the run itself found, a boundary crossed,
// a latency-bound regime, else a slow link somewhere on the new hosts (the fabric is known) or
// unknown.
void attribute(const ScalingOptions& o, const std::vector<Point>& pts, const std::vector<size_t>& F, size_t k,
               bool latency, ScalingRow& row) {
  const Point& q = pts[k];
  int maxN = 0, maxP = -1, maxR = -1;
  std::set<std::string> seen;
  for (size_t i : F) {
    maxN = std::max(maxN, pts[i].span.nodes), maxP = std::max(maxP, pts[i].span.pods), maxR = std::max(maxR, pts[i].span.racks);
    seen.insert(pts[i].p->group.hosts.begin(), pts[i].p->group.hosts.end());
  }
  const auto& g = q.p->group;
  if (!g.slow_hosts.empty()) {
    row.cause = "slow_link", row.hosts = g.slow_hosts;
    row.note = "its own communicators showed the link: slower than their like";
  } else if (maxP == 1 && q.span.pods > 1) {  // a new link class on the ring: the first time it spans several
    row.cause = "pod_boundary", row.boundary = fmt::format("{} pods (the smaller scales: one)", q.span.pods);
  } else if (maxR == 1 && q.span.racks > 1) {
    row.cause = "rack_boundary", row.boundary = fmt::format("{} racks (the smaller scales: one)", q.span.racks);
  } else if (!F.empty() && maxN == 1 && q.span.nodes > 1) {  // nodes -1 (unknown) never crosses
    row.cause = "node_boundary", row.boundary = fmt::format("{} nodes (the smaller scales: one)", q.span.nodes);
  } else if (latency) {
    row.cause = "latency_bound";
    row.note = "the latency term dominates (small messages or a long ring)";
  } else if (o.fabric || !o.places.empty()) {
    // No boundary crossed on a known fabric: bus bandwidth does not fall with ring length, so a link
    // is slow. One communicator spanning every host cannot say which: the suspects are the hosts
    // the smaller, well-behaved scales did not have.
    row.cause = "slow_link";
    for (const auto& h : g.hosts)
      if (!seen.count(h)) row.hosts.push_back(h);
    if (row.hosts.empty()) row.hosts = g.hosts;
    row.note = fmt::format("no boundary crossed: a slow link among {} hosts", row.hosts.size());
  } else {
    row.cause = "unknown";
    row.note = "no boundary known (give --topology or --fabric to tell a boundary from a slow link)";
  }
}

ScalingRow base_row(const Point& q) {
  const auto& g = q.p->group;
  ScalingRow r;
  r.series = series_of(g), r.collective = g.collective, r.bytes = g.bytes;
  r.group_size = g.group_size, r.nodes = g.nodes, r.pods = q.span.pods, r.racks = q.span.racks;
  r.time_ms = g.time_ms, r.busbw_gbps = g.busbw_gbps, r.run = q.p->run, r.ops = g.ops;
  return r;
}

// The bound of each point: the fabric's terms, else a fit over the points of its regime (from the
// last cliff at or before it to the next one: one link class) that are not cliffs but its start;
// for a cliff, the regime it left.
// One run's groups are each their own link class: no fit there.
std::string bound_of(const ScalingOptions& o, const std::vector<Point>& pts, const std::vector<ScalingRow>& rows, size_t k) {
  topology::Bound b{};
  if (!std::isnan(fabric_ms(o, pts[k], pts[k].span.nodes, pts[k].span.pods, &b)))
    return b == topology::Bound::Latency ? "latency" : "bandwidth";
  if (o.within_run) return "";
  // A cliff is judged by the regime it left: is its time what that regime's latency term reaches?
  size_t from = 0, to = pts.size();
  const size_t last = rows[k].cliff ? k : k + 1;
  for (size_t i = 0; i < last; ++i)
    if (rows[i].cliff) from = i;
  if (rows[k].cliff) to = k;
  for (size_t i = k + 1; i < pts.size() && to == pts.size(); ++i)
    if (rows[i].cliff) to = i;
  std::vector<double> xs, ts;
  std::set<double> distinct;
  for (size_t i = from; i < to; ++i)
    if (i == from || !rows[i].cliff) xs.push_back(pts[i].x), ts.push_back(pts[i].p->group.time_ms), distinct.insert(pts[i].x);
  if (distinct.size() < 2) return "";
  const Fit f = fit_line(xs, ts);
  return 2 * f.a * pts[k].x >= pts[k].p->group.time_ms ? "latency" : "bandwidth";
}

void judge_series(const ScalingOptions& o, std::vector<Point>& pts, std::vector<ScalingRow>& out) {
  std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.p->group.group_size < b.p->group.group_size; });
  std::vector<ScalingRow> rows;
  for (size_t k = 0; k < pts.size(); ++k) {
    ScalingRow row = base_row(pts[k]);
    // The smaller scales of the current regime: a cliff starts a new one (the class it crossed into
    // is the baseline for the scales after it).
    std::vector<size_t> F;
    size_t from = 0;
    for (size_t i = 0; i < k; ++i)
      if (rows[i].cliff) from = i;
    if (!o.within_run)
      for (size_t i = from; i < k; ++i)
        if (pts[i].p->group.group_size < pts[k].p->group.group_size && (i == from || !rows[i].cliff)) F.push_back(i);
    Judged j;
    if (o.within_run) {  // the fabric's own figure, uncalibrated
      topology::Bound b{};
      j.expected = fabric_ms(o, pts[k], pts[k].span.nodes, pts[k].span.pods, &b), j.fits = true;
      j.latency = b == topology::Bound::Latency;
    } else {
      j = extrapolate(o, pts, F, k);
    }
    row.expected_ms = j.expected, row.note = j.note;
    if (!std::isnan(j.expected) && j.expected > 0) {
      row.ratio = row.time_ms / j.expected;
      if (pts[k].bus >= 0) row.expected_gbps = pts[k].bus / (j.expected * 1e6);
    }
    row.cliff = j.fits && row.ratio > o.cliff_factor;
    if (row.cliff) attribute(o, pts, F, k, j.latency, row);
    const auto& g = pts[k].p->group;
    if (!row.cliff && g.slowest_ratio >= o.cliff_factor && row.note.empty())
      row.note = fmt::format("its slowest communicator took {:.2f}x the median of its like", g.slowest_ratio);
    rows.push_back(std::move(row));
  }
  for (size_t k = 0; k < rows.size(); ++k) rows[k].bound = bound_of(o, pts, rows, k);
  out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
}

}  // namespace

int size_bucket(int64_t bytes) {
  if (bytes <= 0) return -1;
  int b = 0;
  while (bytes >>= 1) ++b;
  return b;
}

std::vector<ScalingRow> scaling_rows(const std::vector<ScalingPoint>& points, const ScalingOptions& opt) {
  std::map<std::string, std::vector<Point>> series;
  std::vector<std::string> order;
  for (const auto& p : points) {
    const auto& span = p.group.span_hosts.empty() ? p.group.hosts : p.group.span_hosts;
    Point q{&p, topology::host_span(span, opt.places, opt.fabric), ring_steps(p.group.collective, p.group.group_size),
            bus_bytes(p.group)};
    q.span.nodes = p.group.nodes;
    const std::string key = series_of(p.group);
    if (!series.count(key)) order.push_back(key);
    series[key].push_back(q);
  }
  std::vector<ScalingRow> out;
  for (const auto& key : order) judge_series(opt, series[key], out);
  return out;
}

}  // namespace collectives
