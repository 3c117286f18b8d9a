// `straggler-scan scaling RUN_OR_SCAN...`: scaling cliffs across runs (docs/scaling-cliffs.md).
#pragma once
#include "driver.hpp"

namespace straggler {
// Collective, like run_analysis: 0, or common::UsageError (one line naming the input) on every process.
int run_scaling(Transport& t, const Options& opt);
}  // namespace straggler
