// Reader of Nsight Systems SQLite exports (schema 3.0 / nsys 2022.4 through 3.25 / nsys 2026.2).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "ranks/timeline.hpp"

namespace ranks {

// A profile that cannot be used; what() is one line naming the file and the problem.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads every rank process of one export: the processes that ran kernels, ordered by CUDA device
// (then pid). A torchrun capture holds several; a per-rank capture one. Rank numbers are left at -1:
// the caller assigns them (discovery.hpp). Throws ProfileError.
std::vector<RankTimeline> read_nsys(const std::string& path);

}  // namespace ranks
