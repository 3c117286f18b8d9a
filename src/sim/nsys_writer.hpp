// Writes one nsys-style SQLite export (schema 3.25 or 3.0) holding one or more simulated rank processes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "conventions.hpp"
#include "schedule.hpp"

namespace sim {

constexpr int64_t kT0 = 1'780'000'000'000'000'000;  // true time of simulation time 0 (UTC ns)
constexpr int64_t kCaptureLead = 500'000'000;         // events start ~0.5 s into the capture

struct FileSpec {
  std::string path;
  int host = 0;
  std::vector<int> ranks;  // global ranks, ascending
  bool per_host = false;   // torchrun-style capture: also lists the launcher process
};

// Writes the file (replacing it); returns the number of rows inserted. Throws std::runtime_error.
int64_t write_nsys_file(const Simulation& sim, const Conventions& cv, const FileSpec& f);

// A kernel's names and launch shape as the writers put them (old_nccl: NCCL <= 2.18 naming, as
// --schema 3.0 writes it); shared with the Kineto writer so both formats name kernels alike.
struct KernelDesc {
  const char* short_name;
  const char* demangled;
  int regs, grid_x, grid_y, block_x, shared_mem;
};
KernelDesc kernel_desc(int kernel, bool old_nccl);

// Local rank / pid of a global rank under fixed conventions (Conventions holds what is written).
inline int local_rank_of(const Simulation& s, int rank) { return rank % s.gpus_per_host; }
inline int64_t pid_of_rank(const Simulation& s, int rank) { return 1000 + local_rank_of(s, rank); }

}  // namespace sim
