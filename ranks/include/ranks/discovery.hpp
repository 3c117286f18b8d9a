// Run directory discovery and rank assignment.
//  (a) one file per rank: the rank comes from the file name (rank_12, rank12, rank-12, x.12.sqlite,
//      or --rank-pattern REGEX with one capture group);
//  (b) one file holding several rank processes (a torchrun capture): processes ordered by CUDA
//      device, node index from the file name (node-03, node3, host_3, or a trailing number; else
//      the file's position among such files), rank = node * processes_per_node + local index;
//  (c) a rank map CSV (file,key,rank; key = pid=N, device=N, or empty for a one-process file)
//      overrides both.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ranks {

// Unusable arguments (no profile found, bad rank map, bad pattern): exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProfileFile {
  std::string path;
  int64_t size = 0;
  std::optional<int> rank_from_name;  // case (a)
  std::optional<int> node_from_name;  // case (b)
};

struct RankMapEntry {
  std::optional<int64_t> pid, device;
  int rank = -1;
};

struct DiscoveryOptions {
  std::string rank_pattern;   // empty: the defaults above
  std::string rank_map_file;  // empty: none
};

struct Discovery {
  std::vector<ProfileFile> files;                            // sorted by path
  std::map<std::string, std::vector<RankMapEntry>> rank_map;  // by path as listed in `files`
};

// Inputs are directories (searched recursively for *.sqlite, hidden entries skipped) or files.
// Throws UsageError.
Discovery discover(const std::vector<std::string>& inputs, const DiscoveryOptions& opt);

// One rank process found in a file after reading it.
struct FoundProcess {
  size_t file = 0;  // index into Discovery::files
  int64_t pid = -1;
  int device = -1;
  int local_index = 0;   // position in the file (ordered by device, pid)
  int procs_in_file = 1;
};

struct Assignment {
  std::vector<int> rank;  // parallel to the FoundProcess list; -1 when rejected
  std::vector<std::string> errors;  // parallel; why rejected ("" if accepted)
};

// Deterministic for the same inputs (every MPI process computes the same answer). A rank claimed
// twice goes to the first claimant in file order; later claimants are rejected with an error.
Assignment assign_ranks(const Discovery& d, const std::vector<FoundProcess>& found);

}  // namespace ranks
