// truth.json: what was generated and which faults an analyser is expected to find.
#pragma once
#include <string>
#include <vector>

#include "nsys_writer.hpp"
#include "schedule.hpp"

namespace sim {

struct RankCounts {
  int64_t kernels = 0, nccl_kernels = 0, h2d_bytes = 0;
};

// `conventions`: the "conventions" member to write instead of the nsys one (--format kineto).
std::string truth_json(const Simulation& sim, const Conventions& cv, const std::vector<FileSpec>& files,
                       const std::vector<RankCounts>& counts, const std::string& conventions = {});

}  // namespace sim
