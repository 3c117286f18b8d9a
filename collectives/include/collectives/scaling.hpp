// All-reduce scaling cliffs (issue 21; docs/scaling-cliffs.md): time and bus bandwidth of like collectives
// against group size, within one run and across runs at different scales, compared with a cost
// model (topology/fabric.hpp: given by --fabric, or fitted to the smaller scales), with each cliff
// attributed to a boundary crossed, a latency-bound regime or a slow link.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "topology/fabric.hpp"

namespace collectives {

// One run's like collectives: the same collective, message-size bucket (or communicator family
// when sizes are unknown), group size and nodes spanned. Saved in each scan (/scaling/groups), so
// that `straggler-scan scaling` reads these rows instead of the profiles.
struct ScalingGroup {
  std::string collective;  // "AllReduce", ...
  std::string family;      // the communicators' kind ("dp", "tp", "pp", "comm"): the series when sizes are unknown
  int64_t bytes = -1;      // median message size of one rank's buffer (-1: unknown)
  int32_t group_size = 0, nodes = 0, communicators = 0;  // nodes -1: a member's host is unknown
  int64_t ops = 0;
  double time_ms = 0;      // median over the communicators of their median transfer time (waiting excluded)
  double busbw_gbps = std::numeric_limits<double>::quiet_NaN();  // of time_ms; NaN when bytes are unknown
  double slowest_ratio = 1;  // the slowest communicator's median transfer over time_ms
  std::vector<std::string> hosts;       // spanned by the group's communicators together, sorted ("" left out)
  std::vector<std::string> span_hosts;  // its widest communicator's hosts: pods and racks are counted over these
  std::vector<std::string> slow_hosts;  // a slow link the run's own comparison found on them (verdict slow_links)
};

// Power-of-two bucket of a message size: floor(log2(bytes)); -1 when unknown.
int size_bucket(int64_t bytes);

struct ScalingPoint {
  ScalingGroup group;
  std::string run;  // the input it came from
};

struct ScalingOptions {
  double cliff_factor = 1.5;    // a cliff: measured time above this factor x the model's extrapolation
  double fit_tolerance = 0.25;  // the smaller scales fit: each within this share of the fitted model
  const topology::Fabric* fabric = nullptr;  // --fabric (nullptr: fit to the data)
  topology::HostTopology places;             // --topology
  bool within_run = false;      // one run: groups compared with the model and their like, no extrapolation
};

// One output row (summary key `scaling`, HDF5 /scaling; ../shared/docs/summary-contract.md).
struct ScalingRow {
  std::string series;      // "AllReduce 256 MiB", or "AllReduce dp" when sizes are unknown
  std::string collective;
  int64_t bytes = -1;
  int32_t group_size = 0, nodes = 0, pods = -1, racks = -1;  // -1: unknown
  double time_ms = 0;
  double busbw_gbps = std::numeric_limits<double>::quiet_NaN();
  double expected_ms = std::numeric_limits<double>::quiet_NaN();    // the model at this point, no new boundary
  double expected_gbps = std::numeric_limits<double>::quiet_NaN();  // bus bytes / expected_ms
  double ratio = std::numeric_limits<double>::quiet_NaN();          // time_ms / expected_ms
  bool cliff = false;
  std::string cause;       // "" (none), pod_boundary, rack_boundary, node_boundary, latency_bound, slow_link, unknown
  std::string boundary;    // what was crossed, in words ("" when nothing)
  std::string bound;       // "latency", "bandwidth" or "" (unknown)
  std::string note;        // why no verdict, or the evidence, in words
  std::vector<std::string> hosts;  // slow_link: the link's hosts (or the suspects)
  std::string run;
  int64_t ops = 0;
};

// The rows of `points`, ordered by series then group size; cliffs judged per series.
std::vector<ScalingRow> scaling_rows(const std::vector<ScalingPoint>& points, const ScalingOptions& opt);

}  // namespace collectives
