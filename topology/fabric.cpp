#include "topology/fabric.hpp"

#include <fmt/format.h>

#include "common/text.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace topology {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Sets `key` from `value`; false for an unknown key, throws for a bad value.
bool set_field(Fabric& f, const std::string& key, const std::string& value, const std::string& where) {
  auto number = [&](double lo, double hi) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || !std::isfinite(v) || v < lo || v > hi)
      throw std::invalid_argument(fmt::format("{}: {} must be a number in [{}, {}], not \"{}\"", where, key, lo, hi,
                                              value.substr(0, 40)));
    return v;
  };
  if (key == "gpus_per_node") f.gpus_per_node = int(number(1, 1024));
  else if (key == "nodes_per_pod") f.nodes_per_pod = int(number(0, 1e6));
  else if (key == "base_latency_us") f.base_latency_us = number(0, 1e6);
  else if (key == "intra_latency_us") f.intra_latency_us = number(0, 1e6);
  else if (key == "inter_latency_us") f.inter_latency_us = number(0, 1e6);
  else if (key == "pod_latency_us") f.pod_latency_us = number(0, 1e6);
  else if (key == "intra_busbw_gbps") f.intra_busbw_gbps = number(1e-3, 1e6);
  else if (key == "inter_busbw_gbps") f.inter_busbw_gbps = number(1e-3, 1e6);
  else if (key == "pod_busbw_gbps") f.pod_busbw_gbps = number(1e-3, 1e6);
  else return false;
  return true;
}

}  // namespace

Fabric parse_fabric(const std::string& text, const std::string& name) {
  Fabric f;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = fmt::format("{}:{}", name, n);
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw std::invalid_argument(where + ": expected `key = value`");
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (!set_field(f, key, value, where))
      throw std::invalid_argument(fmt::format("{}: unknown key \"{}\" (docs/fabric.md lists them)", where, key.substr(0, 40)));
  }
  return f;
}

Fabric read_fabric(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_fabric(s.str(), path);
}

HostTopology parse_topology(const std::string& text, const std::string& name) {
  HostTopology t;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream fields(line.substr(0, line.find('#')));
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.empty()) continue;
    const std::string where = fmt::format("{}:{}", common::printable(name), n);
    if (f.size() != 3) throw std::invalid_argument(fmt::format("{}: expected `HOSTNAME RACK POD`, got {} fields", where, f.size()));
    if (!t.emplace(f[0], HostPlace{f[1], f[2]}).second)
      throw std::invalid_argument(fmt::format("{}: host \"{}\" listed twice", where, common::printable(f[0].substr(0, 60))));
  }
  return t;
}

HostTopology read_topology(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(common::printable(path) + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_topology(s.str(), path);
}

Span host_span(const std::vector<std::string>& hosts_sorted, const HostTopology& places, const Fabric* fabric) {
  Span s;
  s.nodes = int(hosts_sorted.size());
  std::set<std::string> racks, pods;
  bool all = !places.empty();
  for (const auto& h : hosts_sorted) {
    auto it = places.find(h);
    if (it == places.end()) {
      all = false;
      break;
    }
    racks.insert(it->second.pod + "/" + it->second.rack), pods.insert(it->second.pod);
  }
  if (all) {
    s.racks = int(racks.size()), s.pods = int(pods.size());
  } else if (fabric && fabric->nodes_per_pod > 0) {
    s.pods = int((hosts_sorted.size() + size_t(fabric->nodes_per_pod) - 1) / size_t(fabric->nodes_per_pod));
  } else if (fabric) {
    s.pods = hosts_sorted.empty() ? 0 : 1;  // the fabric file says: no pod boundary
  }
  return s;
}

CollectiveCost collective_cost(const Fabric& f, const std::string& coll, CostAlgo algo, double bus_bytes, int n, int nodes,
                               int pods) {
  CollectiveCost c;
  n = std::max(n, 1), nodes = std::clamp(nodes, 1, n), pods = std::clamp(pods, 1, nodes);
  c.nodes = nodes, c.pods = pods;
  const bool all_reduce = coll == "AllReduce";
  const double link_lat = pods > 1 ? f.pod_latency_us : f.inter_latency_us;
  const double busbw = pods > 1 ? f.pod_busbw_gbps : nodes > 1 ? f.inter_busbw_gbps : f.intra_busbw_gbps;
  if (algo == CostAlgo::Tree) {  // tuning.cc: baseLat + 2((nRanks/nNodes - 1) intraLat + log2(nNodes) interLat)
    c.latency_us = f.base_latency_us + 2 * ((double(n) / nodes - 1) * f.intra_latency_us + std::log2(double(nodes)) * link_lat);
  } else {  // ring: steps 2(n-1) for all-reduce, n-1 for the others; 2(N-1) resp. N-1 of them between nodes
    const double steps = coll == "SendRecv" ? 1 : all_reduce ? 2.0 * (n - 1) : double(n - 1);
    const double inter = coll == "SendRecv" ? (nodes > 1 ? 1 : 0) : all_reduce ? 2.0 * (nodes - 1) : double(nodes - 1);
    c.latency_us = f.base_latency_us + (steps - inter) * f.intra_latency_us + inter * link_lat;
  }
  c.bandwidth_us = bus_bytes / (busbw * 1e3);  // GB/s = 1e3 bytes per us
  c.time_us = c.latency_us + c.bandwidth_us;
  c.bound = c.latency_us > c.bandwidth_us ? Bound::Latency : Bound::Bandwidth;
  return c;
}

}  // namespace topology
