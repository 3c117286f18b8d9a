// What the walls analysis (src/analyses/walls.cpp, docs/walls.md) found about waiting, for
// `straggler-scan compare`: per rank, its waits in collectives and the waits charged to it.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "analysis.hpp"

namespace straggler::analyses {

struct RankWaiting {
  int32_t rank = -1;
  double waiting_ms = 0;       // its steady window's waits for the last member (the replay's)
  double caused_wait_ms = -1;  // the job's waits charged to it (root blame share); -1: unknown
};
// Every rank's (all of them: the table is replicated); empty without the analysis.
std::vector<RankWaiting> rank_waiting(const std::vector<std::unique_ptr<Analysis>>& analyses);

}  // namespace straggler::analyses
