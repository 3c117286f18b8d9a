// Bus bandwidth of one collective, defined as nccl-tests does (github NVIDIA/nccl-tests
// doc/PERFORMANCE.md; the export notes in ../shared/docs, section 8): algbw = S / t, busbw = algbw
// x factor, with n the ranks of the communicator. busbw is comparable with a link's peak whatever the
// algorithm. S is the operation's array: NCCL's NVTX "Message size [bytes]" is one rank's buffer,
// so for AllGather and ReduceScatter S = message x n. t is the transfer time (waiting for late
// members excluded: the replay's end minus last arrival), never the kernel's duration.
#pragma once
#include <cstdint>

#include "collectives/nccl_kernel.hpp"

namespace collectives {

// AllReduce 2(n-1)/n; ReduceScatter, AllGather, AllToAll (n-1)/n; Broadcast, Reduce and a p2p
// SendRecv 1; 0 for a type whose traffic is unknown (Generic, Unknown, Gather, Scatter) or n < 1.
double bus_factor(CollectiveType type, int n);

// S in bytes for a per-rank message size; -1 when the size is unknown (< 0).
int64_t operation_bytes(CollectiveType type, int64_t message_bytes, int n);

// busbw in GB/s (1e9 bytes per second); NaN when the size, the factor or the time is unknown.
double bus_bandwidth_gbps(CollectiveType type, int64_t message_bytes, int n, double transfer_ns);

}  // namespace collectives
