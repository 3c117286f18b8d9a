// Reader of Nsight Systems SQLite exports (schema 3.0 / nsys 2022.4 through 3.25 / nsys 2026.2).
#pragma once
#include <string>
#include <vector>

#include "ranks/profile_reader.hpp"
#include "ranks/timeline.hpp"

namespace ranks {

// Reads every rank process of one export: the processes that ran kernels, ordered by CUDA device
// (then pid). A torchrun capture holds several; a per-rank capture one. Rank numbers are left at -1:
// the caller assigns them (discovery.hpp). Throws ProfileError.
std::vector<RankTimeline> read_nsys(const std::string& path);

// The format's registration: SQLite files (sniffed by the SQLite header) with extension .sqlite.
ProfileFormat nsys_sqlite_format();

}  // namespace ranks
