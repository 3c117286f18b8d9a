// `straggler-scan compare GOOD BAD`: what changed between two runs (docs/compare.md).
#pragma once
#include <string>
#include <vector>

#include "driver.hpp"
#include "table.hpp"

namespace straggler {
// Collective, like run_analysis: 0, or common::UsageError (one line naming the input) on every process.
int run_compare(Transport& t, const Options& opt);
// Its tables for an empty comparison (docs/hdf5-layout.md is generated from them).
std::vector<tables::TableData> compare_table_schemas();
}  // namespace straggler
