#include "collectives/bandwidth.hpp"

#include <cmath>
#include <limits>

namespace collectives {

double bus_factor(CollectiveType type, int n) {
  if (n < 1) return 0;
  const double dn = double(n);
  switch (type) {
    case CollectiveType::AllReduce: return 2.0 * (dn - 1) / dn;
    case CollectiveType::ReduceScatter:
    case CollectiveType::AllGather:
    case CollectiveType::AllToAll: return (dn - 1) / dn;
    case CollectiveType::Broadcast:
    case CollectiveType::Reduce:
    case CollectiveType::SendRecv: return 1.0;
    default: return 0;
  }
}

int64_t operation_bytes(CollectiveType type, int64_t message_bytes, int n) {
  if (message_bytes < 0 || n < 1) return -1;
  const bool whole = type == CollectiveType::AllGather || type == CollectiveType::ReduceScatter;
  if (whole && message_bytes > std::numeric_limits<int64_t>::max() / n) return -1;
  return whole ? message_bytes * n : message_bytes;
}

double bus_bandwidth_gbps(CollectiveType type, int64_t message_bytes, int n, double transfer_ns) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t s = operation_bytes(type, message_bytes, n);
  const double f = bus_factor(type, n);
  if (s < 0 || f <= 0 || !(transfer_ns > 0) || !std::isfinite(transfer_ns)) return nan;
  return double(s) / transfer_ns * f;  // bytes per ns = GB/s
}

}  // namespace collectives
