// One matched operation, decomposed: who arrived last, how long the others waited, how long the
// transfer itself took, and the bandwidth it reached. Times are clock-corrected ns.
//  arrival_m  = kernel start on member m
//  wait_m     = last arrival - arrival_m
//  skew       = last arrival - first arrival
//  transfer   = latest end - last arrival (the collective cannot progress before the last arrives)
//  hold       = last arrival - second-to-last arrival: the time the last arriver alone held the
//               others back
//  blame      = sum of the others' waits (last arrival - their arrival), attributed to the last
//               arriver: the peer time it cost
//  busbw      = bytes / transfer * factor (nccl-tests doc/PERFORMANCE.md): AllReduce 2(n-1)/n,
//               AllGather/ReduceScatter/AllToAll (n-1)/n (bytes = total array), others 1
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/nccl_kernel.hpp"

namespace collectives {

struct OpTiming {
  int last = -1;  // member index
  int64_t first_arrival = 0, last_arrival = 0, second_arrival = 0, end_max = 0;
  int64_t skew = 0, transfer = 0, hold = 0, blame = 0;
};

OpTiming decompose(const std::vector<int64_t>& arrival, const std::vector<int64_t>& end);


}  // namespace collectives
