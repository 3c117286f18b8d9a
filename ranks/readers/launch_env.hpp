// The rank a launcher gave the profiled process, from the environment nsys recorded for the
// process it launched (internal to ranks/). `nsys profile` run by srun, mpirun or a per-rank
// wrapper starts the rank's process itself and writes its environment as META_DATA_CAPTURE rows
// (`PROCESS_0:ENVIRONMENT_VARIABLE` = `NAME="value"`; ../shared/docs/nsys-export-notes.md 4.7, seen
// in every real export here). Only the launchers' rank and size variables and CUDA_VISIBLE_DEVICES are read, parsed as
// numbers and nothing else kept: the environment also holds the user's secrets.
#pragma once
#include <vector>

#include "sqlite_db.hpp"

namespace ranks::detail {

struct LaunchRank {
  int rank = -1, world = -1;  // -1: not recorded
  std::vector<int> visible;   // CUDA_VISIBLE_DEVICES as GPU indices (empty: absent, or UUIDs)
};

// torchrun's RANK / WORLD_SIZE, then Open MPI's, PMI's and Slurm's (first found).
LaunchRank launch_rank(const Database& db);

}  // namespace ranks::detail
