// Run directory discovery: the profiles of a run and what their names say. The rank a file's name
// gives: rank_12, rank12, rank-12, x.12.sqlite, or --rank-pattern REGEX with one capture group;
// the node: node-03, node3, host_3, or a trailing number. A rank map CSV (file,key,rank; key =
// pid=N, device=N, or empty for a one-process file) is read here too. Which process gets which
// rank: rank_assignment.hpp. When some files of a run are named by rank, a file whose name has
// neither a rank nor a node number is rejected ("no rank number in the file name") there.
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

}  // namespace ranks
