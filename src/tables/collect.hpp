// The result tables of a run: the file's attributes, then each analysis's tables in registry
// order (src/analysis.hpp).
#pragma once
#include <memory>
#include <vector>

#include "analysis.hpp"
#include "results.hpp"
#include "table.hpp"

namespace straggler::tables {

// Collective only in what it later makes the writer do (the data itself is local).
ResultTables collect_tables(const RunResults& res, const std::vector<std::unique_ptr<Analysis>>& analyses);

}  // namespace straggler::tables
