// Which training rank each process found in the profiles is, from the file names and contents
// (discovery.hpp lists the files). Deterministic for the same inputs, so every MPI process
// computes the same answer.
//  (a) one file per rank: the rank comes from the file name; such a file holding several rank
//      processes is an error naming their pids (a torn file shows phantom ones) unless the rank
//      map says;
//  (b) one file holding several rank processes (a torchrun capture per host): processes ordered
//      by CUDA device then pid, rank = node * processes_per_node + local index. The node is the
//      number in the file name (node-03, host_3, a trailing number) when those numbers can be node
//      indices, else the file's position among such files (hostnames such as gpu-1017 are no
//      node index; a warning says so);
//  (c) a rank map CSV (file,key,rank) overrides both;
//  (d) a one-process file whose content names its rank (the PyTorch profiler's distributedInfo; the
//      launcher's RANK / SLURM_PROCID ... in the environment the profiler recorded, launch_env.hpp)
//      takes that rank, over its file name (names such as worker0_step_12.1694128201545 mislead).
//  (e) one-process files numbered as in (b) but two of them on one host (a profiler's default report1,
//      report2 ...: a session counter), whose content names no rank: ranks by host (name order),
//      then by the GPU's index on the host (CUDA_VISIBLE_DEVICES as recorded, else the ordinal).
// Nothing is sized by a number from a file name: node numbers that are no plausible index are
// replaced by positions, and rank numbers far beyond the ranks found (process ids from a profiler's
// `-o report.%p`: repro N3) are refused unless --layout says how large the job is.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ranks/discovery.hpp"

namespace ranks {

// One rank process found in a file after reading it.
struct FoundProcess {
  size_t file = 0;  // index into Discovery::files
  int64_t pid = -1;
  int device = -1;
  int local_index = 0;   // position in the file (ordered by device, pid)
  int procs_in_file = 1;
  int64_t kernels = 0;   // kernels it ran
  int64_t nccl = 0;      // NCCL kernels it ran or launched (completed or not)
  std::string host = {};  // as its profile names it ("" unknown)
  std::string gpu_bus = {};  // RankTimeline::gpu_bus: the physical GPU ("" unknown)
  int host_gpu = -1;         // RankTimeline::host_gpu: its index on the host (-1 unknown)
  int64_t wall_start = 0, wall_end = 0;  // its capture on the wall clock (UTC ns; 0: unknown)
  int claimed_rank = -1;  // the rank its profile's content names (RankTimeline::claimed_rank), -1: none
  int claimed_world = -1;  // the job's size its content names (RankTimeline::claimed_world), -1: none
  std::string unusable = {};  // RankTimeline::unusable: left out with this reason
};

// Bounds of the rank space, so that memory follows the ranks found, never a number in a name.
struct RankLimits {
  int64_t world = 0;   // --layout's TP x PP x DP, 0 when not given
  std::string layout;  // --layout as given, for messages
  // Without --layout, ranks from file names must stay below kSpread x (ranks found) + kSlack:
  // every 8th rank of a job profiled (one per node) passes, process ids do not.
  static constexpr int64_t kSpread = 16, kSlack = 64;
  // Never more ranks than this, whatever the source (--layout included).
  static constexpr int64_t kMaxRanks = int64_t(1) << 21;
};

struct Assignment {
  std::vector<int> rank;  // parallel to the FoundProcess list; -1 when rejected
  std::vector<std::string> errors;  // parallel; why rejected ("" if accepted)
  std::vector<int> claimed;  // parallel; the rank it claimed (also when rejected as a duplicate), -1: none
  std::vector<std::string> warnings;  // about the numbering as a whole ("FILE: ..."), printable
};

// A rank claimed twice goes to the first claimant in file order; later claimants are rejected
// with an error. In a per-host file, a process that is no rank of the job (pid 0: rows without a
// process; or no NCCL kernel while the file's other processes ran some: a helper process, repro
// N6) is rejected with an error and numbers no one. Error texts do not repeat the file's path (the
// caller prints it) and are printable(). Throws UsageError for ranks beyond `limits`.
Assignment assign_ranks(const Discovery& d, const std::vector<FoundProcess>& found, const RankLimits& limits = {});

}  // namespace ranks
