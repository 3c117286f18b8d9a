// Run directory discovery and rank assignment.
//  (a) one file per rank: the rank comes from the file name (rank_12, rank12, rank-12, x.12.sqlite,
//      or --rank-pattern REGEX with one capture group); such a file holding several rank processes
//      is an error naming their pids (a torn file shows phantom ones) unless the rank map says;
//  (b) one file holding several rank processes (a torchrun capture): processes ordered by CUDA
//      device, node index from the file name (node-03, node3, host_3, or a trailing number; else
//      the file's position among such files), rank = node * processes_per_node + local index;
//  (c) a rank map CSV (file,key,rank; key = pid=N, device=N, or empty for a one-process file)
//      overrides both.
// When some files of a run are named by rank, a file whose name has neither a rank nor a node
// number is rejected ("no rank number in the file name") instead of being given a rank by position.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.hpp"
#include "common/text.hpp"

namespace ranks {

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

// A *.sqlite entry that is not analysed: not a regular file (a directory, a FIFO...), or a second
// name (symlink, hard link) of a file already listed.
struct SkippedEntry {
  std::string path, reason;
  std::optional<int> rank_from_name;
};

struct Discovery {
  std::vector<ProfileFile> files;                            // sorted by path
  std::map<std::string, std::vector<RankMapEntry>> rank_map;  // by path as listed in `files`
  std::vector<SkippedEntry> skipped;                         // sorted by path
};

// Inputs are directories (searched recursively for *.sqlite, hidden entries skipped) or files.
// Entries that do not exist (broken links) are kept: reading them reports why. Two names of one
// file (same device and inode) are analysed once, under the first name in path order.
// Throws UsageError (also for a --rank-pattern that gives a rank for no file).
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
  std::vector<int> claimed;  // parallel; the rank it claimed (also when rejected as a duplicate), -1: none
};

// Deterministic for the same inputs (every MPI process computes the same answer). A rank claimed
// twice goes to the first claimant in file order; later claimants are rejected with an error.
// Error texts do not repeat the file's path (the caller prints it) and are printable().
Assignment assign_ranks(const Discovery& d, const std::vector<FoundProcess>& found);

}  // namespace ranks
