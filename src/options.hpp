// Command line of straggler-scan.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <vector>

#include "results.hpp"
#include "topology/layout.hpp"

namespace straggler {

struct Options {
  // `straggler-scan report SCAN.h5`: print the report (and --summary) of a saved scan.
  // `straggler-scan scaling RUN_OR_SCAN...`: scaling cliffs across runs (docs/scaling-cliffs.md).
  enum class Command : uint8_t { Scan, Report, Scaling, Compare } command = Command::Scan;
  std::string scan_file;            // report: the HDF5 of a scan
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
  bool progress = false;            // --progress: progress lines on stderr even when it is no terminal
  bool timings = false;             // --timings: wall time of each stage on stderr
  double timeout_s = 600;           // --timeout: under MPI, how long a silent process is waited for (0: forever)
  // --hang-margin: the least time a member's capture must run past the others' arrival at an op it
  // never reached for a desync (else its capture merely ended), and how old a launch that never
  // completed must be to count as stuck (collectives::kMinHangMarginNs; replay.hpp, Desync).
  double hang_margin_s = 1.0;
  std::string command_line;         // as given, for the output's provenance
  double cliff_factor = 1.5;        // scaling: a cliff is time above this factor x the model's extrapolation
  // Options the registered analyses declare (AnalysisInfo::options), by name: every one present,
  // given or its default. An analysis reads its own through analysis_option().
  std::map<std::string, std::string> analysis_options;
  // Ranks the driver leaves out, with why (not from the command line: a run analysed again without
  // the ranks of another job it found among these, CrossRankResults::foreign_ranks).
  std::map<int32_t, std::string> excluded_ranks;
  // A scan that `compare` or `scaling` runs on a run directory: a failure is theirs to say, in
  // their one line (Scan::failure), not printed by the scan.
  bool inner = false;
  std::string analysis_option(const std::string& name) const {
    auto it = analysis_options.find(name);
    return it == analysis_options.end() ? std::string() : it->second;
  }
};

// Parses argv. Returns false after printing help/version (exit 0; `silent`: print nothing, for
// all but one process of an MPI launch). Throws common::UsageError.
bool parse_options(int argc, char** argv, Options& out, bool silent = false);

// The options of a plain scan of `input` with every analysis option at its default but those in
// `keep` (copied from `from`): the scans `straggler-scan scaling` runs on run directories.
Options scan_options_for(const std::string& input, const Options& from, const std::vector<std::string>& keep);

// --layout against the ranks found (`world` = highest accepted rank + 1; the same on every
// process): a layout smaller than `world` is an error (ranks it has no place for); a larger one
// is accepted (only some ranks profiled, or profiles that failed). Throws common::UsageError.
void check_layout(const Options& opt, int world, const std::vector<FailureRow>& failures);

// Checks the output paths before any work: parent directory writable, not inside an input
// directory, not an input file, absent or a regular file. Throws common::UsageError.
void check_output_paths(const Options& opt);
// After discovery: neither output is one of the files the run reads (profiles, the rank map),
// compared by device and inode. Throws common::UsageError.
void check_outputs_not_inputs(const Options& opt, const std::vector<std::string>& inputs);

}  // namespace straggler
