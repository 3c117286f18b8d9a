#pragma once
#include "options.hpp"
#include "transport.hpp"

namespace straggler {
// Runs the whole analysis on every process of the transport. Returns the exit status (0 or 2; the contract
// in docs). Throws ranks::UsageError for unusable arguments (status 2) and anything else for an
// internal failure (status 1; the caller aborts the MPI job so nobody waits).
int run_analysis(Transport& t, const Options& opt);
}
