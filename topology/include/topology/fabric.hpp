// The fabric a job ran on and an alpha-beta cost model of NCCL collectives over it (issue 21;
// docs/fabric.md: the file format and the model, with NCCL's tuner as its source).
//
// Link classes by what a collective's ring or tree crosses: inside a node (NVLink), between nodes
// of one pod (the leaf/spine fabric), across pods. Each class has a per-hop latency and a bus
// bandwidth; a collective runs at the bandwidth of the slowest class it crosses and pays a
// latency per step on each class, as NCCL's tuner models it (src/graph/tuning.cc).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/layout.hpp"

namespace topology {

struct Fabric {
  int gpus_per_node = 8;
  int nodes_per_pod = 0;  // 0: one pod (no pod boundary)
  double base_latency_us = 6.6;                                       // per collective (NCCL Ring LL)
  double intra_latency_us = 0.6, inter_latency_us = 2.7, pod_latency_us = 5.0;  // per hop
  double intra_busbw_gbps = 360, inter_busbw_gbps = 45, pod_busbw_gbps = 20;     // per link class
};

// Parses `key = value` lines ('#' starts a comment; keys as the Fabric fields). Throws
// std::invalid_argument with one line "FILE:LINE: problem" (unknown key, bad or out-of-range
// number, missing '=') or "FILE: cannot read".
Fabric read_fabric(const std::string& path);
Fabric parse_fabric(const std::string& text, const std::string& name);

// Where each host sits (`--topology FILE`: one host per line, `HOSTNAME RACK POD`, whitespace
// separated, '#' starts a comment). Throws std::invalid_argument "FILE:LINE: problem" (wrong
// field count, a host twice) or "FILE: cannot read".
struct HostPlace {
  std::string rack, pod;
};
using HostTopology = std::map<std::string, HostPlace>;
HostTopology read_topology(const std::string& path);
HostTopology parse_topology(const std::string& text, const std::string& name);

// The pods and racks a set of hosts spans: from `places` where it names them all (else -1), or
// for pods from the fabric's nodes_per_pod as ceil(hosts / nodes_per_pod) (the hosts assumed to
// start at a pod boundary; 1 when nodes_per_pod is 0: the fabric has none); -1: unknown.
struct Span {
  int nodes = 0, racks = -1, pods = -1;
};
Span host_span(const std::vector<std::string>& hosts_sorted, const HostTopology& places, const Fabric* fabric);

enum class CostAlgo : uint8_t { Ring, Tree };
enum class Bound : uint8_t { Latency, Bandwidth };  // which term dominates

struct CollectiveCost {
  double time_us = 0, latency_us = 0, bandwidth_us = 0;
  int nodes = 0, pods = 0;  // spanned
  Bound bound = Bound::Bandwidth;
};

// The modelled time of one collective: `coll` is "AllReduce", "ReduceScatter", "AllGather",
// "Broadcast", "Reduce", "AllToAll" or "SendRecv"; `bus_bytes` = S x the nccl-tests factor
// (collectives/bandwidth.hpp); n ranks spanning `nodes` nodes and `pods` pods (>= 1 each).
CollectiveCost collective_cost(const Fabric& f, const std::string& coll, CostAlgo algo, double bus_bytes, int n,
                               int nodes, int pods);

}  // namespace topology
