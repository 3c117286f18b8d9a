// Collective time and bus bandwidth by size and span (docs/scaling-cliffs.md). Per run: the matched ops
// of every communicator (waiting excluded: collectives/replay.hpp) grouped by collective, message
// size bucket (communicator family when sizes are unknown), group size and nodes spanned; each
// group against the fabric model (--fabric) and its like. The groups are saved
// (/scaling/groups) so that `straggler-scan scaling` compares runs from their HDF5 alone.
// Options --fabric FILE, --topology FILE.
#include "analyses/scaling.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analyses/builtin.hpp"
#include "collectives/bandwidth.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"
#include "exchange.hpp"
#include "h5_read.hpp"
#include "json_writer.hpp"
#include "table_read.hpp"

namespace straggler {

// One communicator's ops of one size bucket, measured by its owner.
struct CommBucket {
  uint32_t comm = 0;
  uint8_t type = 0;  // collectives::CollectiveType of these ops (a communicator may run several)
  int32_t bucket = -1;
  int64_t ops = 0, median_bytes = -1;
  double median_transfer_ns = 0;
};
template <>
struct Wire<CommBucket> {
  static void fields(auto& ar, auto& b) { ar(b.comm, b.type, b.bucket, b.ops, b.median_bytes, b.median_transfer_ns); }
};
struct RankHost {
  int32_t rank = -1;
  std::string host;
};
template <>
struct Wire<RankHost> {
  static void fields(auto& ar, auto& h) { ar(h.rank, h.host); }
};

namespace analyses {
namespace {

using collectives::ScalingGroup;
using collectives::ScalingRow;
using tables::col;

// The owned communicators' ops, per collective type and size bucket (p2p links aside: the
// pipeline analysis has them). A communicator may run several collectives (FSDP: all-gather and
// reduce-scatter; DP: all-reduce and a broadcast): each its own point.
std::vector<CommBucket> measure_owned(const CrossRankResults& x) {
  std::vector<CommBucket> mine;
  replay_owned(x, [&](size_t ci, const collectives::CommReplay& rp) {
    if (x.comms[ci].p2p) return;
    std::map<std::pair<uint8_t, int>, std::pair<std::vector<double>, std::vector<int64_t>>> by;
    for (const auto& o : rp.ops) {
      auto& b = by[{uint8_t(o.type), collectives::size_bucket(o.bytes)}];
      b.first.push_back(double(o.transfer)), b.second.push_back(o.bytes);
    }
    for (auto& [key, v] : by)
      mine.push_back({uint32_t(ci), key.first, key.second, int64_t(v.first.size()), common::median(v.second),
                      common::median(v.first)});
  });
  return mine;
}

std::string family_of(const CommSummary& c) {
  return c.id.kind ? topology::group_kind_name(*c.id.kind) : std::string("comm");
}

// Like collectives together: (collective, family, size bucket, group size, nodes). Nodes are
// unknown (-1) when a member's host is.
std::vector<ScalingGroup> group(const CrossRankResults& x, const std::vector<CommBucket>& all,
                                const std::map<int32_t, std::string>& host_of) {
  using Key = std::tuple<std::string, std::string, int32_t, int32_t, int32_t>;
  struct Acc {
    ScalingGroup g;
    std::vector<double> medians;
    std::vector<int64_t> bytes;
    std::set<std::string> hosts, slow;
  };
  std::map<Key, Acc> groups;
  for (const CommBucket& b : all) {
    const CommSummary& c = x.comms[b.comm];
    std::set<std::string> hosts;
    bool unknown = false;
    for (int32_t r : c.ranks) {
      auto it = host_of.find(r);
      if (it == host_of.end() || it->second.empty()) unknown = true;
      else hosts.insert(it->second);
    }
    const int32_t nodes = unknown ? -1 : int32_t(hosts.size());
    const std::string coll = collectives::collective_name(collectives::CollectiveType(b.type)), fam = family_of(c);
    Acc& a = groups[{coll, fam, b.bucket, int32_t(c.ranks.size()), nodes}];
    a.g.collective = coll, a.g.family = fam, a.g.group_size = int32_t(c.ranks.size()), a.g.nodes = nodes;
    a.g.communicators++, a.g.ops += b.ops;
    a.medians.push_back(b.median_transfer_ns), a.bytes.push_back(b.median_bytes);
    a.hosts.insert(hosts.begin(), hosts.end());
    // Pods and racks are counted over one communicator's hosts (the union would put an in-node
    // TP group across every pod): the widest of the group, ties to the first host list in order
    // (the same choice whatever order the processes' records arrive in).
    std::vector<std::string> list(hosts.begin(), hosts.end());
    auto& span = a.g.span_hosts;
    if (!unknown && (list.size() > span.size() || (list.size() == span.size() && list < span))) span = std::move(list);
    for (const auto& l : x.verdict.slow_links)
      if (std::find(l.communicators.begin(), l.communicators.end(), c.name) != l.communicators.end())
        a.slow.insert(l.hosts.begin(), l.hosts.end());
  }
  std::vector<ScalingGroup> out;
  for (auto& [key, a] : groups) {
    ScalingGroup g = a.g;
    g.time_ms = common::median(a.medians) / 1e6;
    g.slowest_ratio = g.time_ms > 0 ? *std::max_element(a.medians.begin(), a.medians.end()) / 1e6 / g.time_ms : 1;
    g.bytes = std::get<2>(key) < 0 ? -1 : common::median(a.bytes);
    g.busbw_gbps = collectives::bus_bandwidth_gbps(collectives::collective_of_name(g.collective), g.bytes, g.group_size,
                                                   g.time_ms * 1e6);
    g.hosts.assign(a.hosts.begin(), a.hosts.end());
    g.slow_hosts.assign(a.slow.begin(), a.slow.end());
    out.push_back(std::move(g));
  }
  return out;
}

std::string na(double v, const char* f) { return std::isfinite(v) ? fmt::format(fmt::runtime(f), v) : "-"; }

std::string verdict_words(const ScalingRow& r) {
  // Strings may come from a loaded file: printed through common::printable.
  if (!r.cliff) return common::printable(r.note);
  std::string s = "CLIFF: " + common::printable(r.cause);
  if (!r.boundary.empty()) s += ", " + common::printable(r.boundary);
  if (!r.hosts.empty()) {
    std::vector<std::string> h;
    for (size_t i = 0; i < r.hosts.size() && i < 6; ++i) h.push_back(common::printable(r.hosts[i]));
    s += fmt::format(", hosts {}{}", fmt::join(h, " "), r.hosts.size() > 6 ? fmt::format(" (+{})", r.hosts.size() - 6) : "");
  }
  if (!r.note.empty() && r.boundary.empty()) s += " (" + common::printable(r.note) + ")";
  return s;
}

class Scaling : public Analysis {
 public:
  explicit Scaling(const Options& spec)
      : opt_(scaling_options(spec.analysis_option("fabric"), spec.analysis_option("topology"), fabric_)) {
    opt_.within_run = true;
  }
  void finish(Transport& t, const RunResults& run) override {
    if (!run.cross) return;
    const CrossRankResults& x = *run.cross;
    std::vector<RankHost> mine;
    for (const auto& r : run.ranks) mine.push_back({r.rank, r.host});
    std::map<int32_t, std::string> host_of;
    for (auto& h : allgather_list(t, mine)) host_of[h.rank] = std::move(h.host);
    groups_ = group(x, allgather_list(t, measure_owned(x)), host_of);
    rows_ = judge();
  }
  void tables(const RunResults&, tables::ResultTables& out) const override {
    out.tables.push_back(scaling_groups_table().materialize(groups_));
    out.tables.push_back(scaling_rows_table().materialize(rows_));
  }
  std::vector<std::pair<std::string, std::string>> summary(const RunResults&, const RunSummaryInput&) const override {
    return {{"scaling", scaling_json(rows_)}};
  }
  ReportSection report(const RunResults&, const RunSummaryInput&) const override {
    return {ReportPart::Measurements, scaling_report(rows_, false, opt_.cliff_factor)};
  }
  void load(const h5read::File& h5) override {
    if (!h5.exists("/scaling")) return;  // a scan from before this analysis: it found nothing
    groups_ = tables::read_rows(h5, scaling_groups_table());
    rows_ = tables::read_rows(h5, scaling_rows_table());
  }
  const std::vector<ScalingGroup>& groups() const { return groups_; }

 private:
  std::vector<ScalingRow> judge() const {
    std::vector<collectives::ScalingPoint> pts;
    for (const auto& g : groups_) pts.push_back({g, ""});
    return collectives::scaling_rows(pts, opt_);
  }
  std::shared_ptr<const topology::Fabric> fabric_;
  collectives::ScalingOptions opt_;
  std::vector<ScalingGroup> groups_;
  std::vector<ScalingRow> rows_;
};

}  // namespace

const tables::Table<ScalingGroup>& scaling_groups_table() {
  using G = ScalingGroup;
  static const tables::Table<G> t{
      "/scaling/groups",
      "like collectives of this run: one row per collective, message size bucket (or family), group size and nodes spanned",
      tables::Distribution::Replicated,
      {col("collective", &G::collective), col("family", &G::family, "", "the communicators' kind: dp, tp, pp or comm"),
       col("bytes", &G::bytes, "B", "median message size of one rank's buffer (-1: unknown)"),
       col("group_size", &G::group_size), col("nodes", &G::nodes), col("communicators", &G::communicators),
       col("ops", &G::ops), col("time_ms", &G::time_ms, "ms", "median over the communicators of their median transfer (waiting excluded)"),
       col("busbw_gbps", &G::busbw_gbps, "GB/s", "bus bandwidth of time_ms (nccl-tests' factors; NaN: size unknown)"),
       col("slowest_ratio", &G::slowest_ratio, "", "the slowest communicator's median over time_ms"),
       col("hosts", &G::hosts, "", "hosts spanned by the group's communicators together"),
       col("span_hosts", &G::span_hosts, "", "the hosts of its widest communicator (pods and racks are counted over these)"),
       col("slow_hosts", &G::slow_hosts, "", "a slow link this run's own comparison found on these communicators (/slow_links)")},
      nullptr};
  return t;
}

const tables::Table<ScalingRow>& scaling_rows_table() {
  using R = ScalingRow;
  static const tables::Table<R> t{
      "/scaling/rows",
      "time and bus bandwidth against the cost model, per series and group size; cliffs and their cause (docs/scaling-cliffs.md)",
      tables::Distribution::Replicated,
      {col("series", &R::series, "", "collective and message size bucket (floor power of two), or family"),
       col("collective", &R::collective), col("bytes", &R::bytes, "B", "-1: unknown"), col("group_size", &R::group_size),
       col("nodes", &R::nodes), col("pods", &R::pods, "", "-1: unknown"), col("racks", &R::racks, "", "-1: unknown"),
       col("time_ms", &R::time_ms, "ms"), col("busbw_gbps", &R::busbw_gbps, "GB/s"),
       col("expected_ms", &R::expected_ms, "ms", "the model's extrapolation from the smaller scales, no new boundary"),
       col("expected_gbps", &R::expected_gbps, "GB/s"), col("ratio", &R::ratio, "", "time_ms / expected_ms"),
       col("cliff", &R::cliff), col("cause", &R::cause), col("boundary", &R::boundary),
       col("bound", &R::bound, "", "latency or bandwidth: which term of the model dominates"), col("note", &R::note),
       col("hosts", &R::hosts, "", "slow_link: the link's hosts, or the suspects"), col("run", &R::run), col("ops", &R::ops)},
      nullptr};
  return t;
}

std::string scaling_json(const std::vector<ScalingRow>& rows) {
  JsonWriter j;
  j.begin_array();
  for (const auto& r : rows) {
    j.begin_object().key("collective").value(r.collective).key("bytes");
    if (r.bytes >= 0) j.value(r.bytes);
    else j.null();
    j.key("group_size").value(int64_t(r.group_size)).key("nodes").value(int64_t(r.nodes)).key("pods");
    if (r.pods >= 0) j.value(int64_t(r.pods));
    else j.null();
    j.key("time_ms").value(r.time_ms).key("busbw_gbps").value(r.busbw_gbps).key("expected_ms").value(r.expected_ms);
    j.key("expected_gbps").value(r.expected_gbps).key("cliff").value(r.cliff).key("cause");
    if (r.cause.empty()) j.null();
    else j.value(r.cause);
    j.key("boundary");
    if (r.boundary.empty()) j.null();
    else j.value(r.boundary);
    j.key("bound");
    if (r.bound.empty()) j.null();
    else j.value(r.bound);
    j.key("hosts").begin_array();
    for (const auto& h : r.hosts) j.value(h);
    j.end_array().key("series").value(r.series).key("ratio").value(r.ratio).key("note").value(r.note);
    j.key("run").value(r.run).key("ops").value(r.ops).end_object();
  }
  return j.end_array().str();
}

std::string scaling_report(const std::vector<ScalingRow>& rows, bool across_runs, double factor) {
  if (rows.empty()) return "";
  std::string s = across_runs ? "\nscaling across runs (transfer time, waiting excluded, against the model):\n"
                              : "\ncollectives by size and span (transfer time, waiting excluded):\n";
  s += fmt::format("  {:<24} {:>6} {:>5} {:>4} {:>10} {:>10} {:>10} {:>6}  {}\n", "series", "ranks", "nodes", "pods", "time ms",
                   "busbw GB/s", "model ms", "bound", "verdict");
  for (const auto& r : rows)
    s += fmt::format("  {:<24} {:>6} {:>5} {:>4} {:>10} {:>10} {:>10} {:>6}  {}\n", common::printable(r.series), r.group_size,
                     r.nodes, r.pods >= 0 ? std::to_string(r.pods) : "-", na(r.time_ms, "{:.3f}"), na(r.busbw_gbps, "{:.1f}"),
                     na(r.expected_ms, "{:.3f}"), r.bound.empty() ? "-" : common::printable(r.bound), verdict_words(r));
  size_t cliffs = 0;
  for (const auto& r : rows) cliffs += r.cliff;
  if (across_runs)
    s += cliffs ? fmt::format("  {} cliff{}: time above {:g}x the model's extrapolation from the smaller scales\n", cliffs,
                              cliffs == 1 ? "" : "s", factor)
                : fmt::format("  no cliff: every scale within {:g}x of the model's extrapolation\n", factor);
  return s;
}

collectives::ScalingOptions scaling_options(const std::string& fabric_file, const std::string& topology_file,
                                            std::shared_ptr<const topology::Fabric>& fabric_holder) {
  collectives::ScalingOptions o;
  try {
    if (!fabric_file.empty()) fabric_holder = std::make_shared<const topology::Fabric>(topology::read_fabric(fabric_file));
    if (!topology_file.empty()) o.places = topology::read_topology(topology_file);
  } catch (const std::invalid_argument& e) {
    throw common::UsageError(e.what());
  }
  o.fabric = fabric_holder.get();
  return o;
}

std::vector<ScalingGroup> scaling_groups(const std::vector<std::unique_ptr<Analysis>>& analyses) {
  for (const auto& a : analyses)
    if (const auto* s = dynamic_cast<const Scaling*>(a.get())) return s->groups();
  return {};
}

std::unique_ptr<Analysis> scaling(const Options& spec) { return std::make_unique<Scaling>(spec); }

}  // namespace analyses
}  // namespace straggler
