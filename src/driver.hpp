#pragma once
#include <functional>
#include <string>
#include <vector>

#include "options.hpp"
#include "ranks/timeline.hpp"
#include "transport.hpp"

namespace straggler {
// Runs the whole analysis on every process of the transport. Returns the exit status (0 or 2; the contract
// in docs). Throws common::UsageError for unusable arguments (status 2) and anything else for an
// internal failure (status 1; the caller aborts the MPI job so nobody waits).
// `read` turns one profile file into its rank processes' timelines (throws ranks::ProfileError);
// benchmarks substitute synthetic timelines.
using ProfileReader = std::function<std::vector<ranks::RankTimeline>(const std::string& path)>;
int run_analysis(Transport& t, const Options& opt, const ProfileReader& read);
int run_analysis(Transport& t, const Options& opt);  // profiles read by ranks::read_profile
}
