#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analysis.hpp"
#include "options.hpp"
#include "ranks/timeline.hpp"
#include "results.hpp"
#include "transport.hpp"

namespace straggler {
struct CrossRankResults;
// Runs the whole analysis on every process of the transport. Returns the exit status (0 or 2; the contract
// in docs). Throws common::UsageError for unusable arguments (status 2) and anything else for an
// internal failure (status 1; the caller aborts the MPI job so nobody waits).
// `read` turns one profile file into its rank processes' timelines (throws ranks::ProfileError);
// benchmarks substitute synthetic timelines.
using ProfileReader = std::function<std::vector<ranks::RankTimeline>(const std::string& path)>;
int run_analysis(Transport& t, const Options& opt, const ProfileReader& read);
int run_analysis(Transport& t, const Options& opt);  // profiles read by ranks::read_profile

// A scan as a value: everything analyse() found on this process (its rank rows, the cross-rank
// results every process shares, each analysis with its state). Several can coexist in one
// process; publish() writes one (HDF5, summary, report) without changing it.
struct Scan {
  RunResults results;  // results.cross points into `cross`
  std::shared_ptr<const CrossRankResults> cross;  // null when nothing was analysed
  std::vector<std::unique_ptr<Analysis>> analyses;
  int status = 0;  // 2: no usable profile, or --strict and some failed (said on process 0; nothing to publish)
  // With status 2 for a scan run by another command (Options::inner): why, in one line for its caller
  // to say (the first file's reason), nothing printed.
  std::string failure;
};
// Collective, like run_analysis; same errors.
Scan analyse(Transport& t, const Options& opt, const ProfileReader& read);
// Collective: writes the outputs `opt` names (no HDF5 when opt.output is empty) and prints the
// report on process 0.
void publish(Transport& t, const Scan& scan, const Options& opt);
// `straggler-scan report SCAN.h5`: process 0 loads the scan (scan_load.hpp), then publish() without
// HDF5. Throws common::UsageError on every process when the file cannot be read back.
int run_report(Transport& t, const Options& opt);
}
