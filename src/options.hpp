// Command line of straggler-scan.
#pragma once
#include <optional>
#include <string>

#include "topology/layout.hpp"
#include <vector>

namespace straggler {

struct Options {
  std::vector<std::string> inputs;  // run directories or profile files
  std::string output = "straggler-scan.h5";
  std::string summary;              // --summary FILE.json ("" = none)
  std::string rank_pattern, rank_map;
  std::string iteration_marker;     // "" = default markers
  std::optional<topology::ParallelLayout> layout;  // --layout TPxPPxDP (Megatron rank order)
  size_t top_kernels = 20;
  bool strict = false;
  bool clock_correction = true;     // --no-clock-correction: trust utcEpochNs (to see what it changes)
  bool quiet = false;
  std::string command_line;         // as given, for the output's provenance
};

// Parses argv. Returns false after printing help/version (exit 0). Throws ranks::UsageError.
bool parse_options(int argc, char** argv, Options& out);

// Checks the output paths before any work: parent directory writable, not inside an input
// directory, not an input file. Throws ranks::UsageError.
void check_output_paths(const Options& opt);

}  // namespace straggler
