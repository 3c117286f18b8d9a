// The result tables of a run: the file's attributes, then each analysis's tables in registry
// order (src/analysis.hpp).
#pragma once
#include <memory>
#include <vector>

#include "analysis.hpp"
#include "results.hpp"
#include "table.hpp"

namespace straggler::tables {

// The layout version of the files we write (root attribute "format_version"): raised whenever a
// table or attribute that reading a scan back relies on changes meaning. A file without it, or
// with another, is not read back (straggler-scan report says so in one line).
inline constexpr int64_t kFormatVersion = 1;

// Collective only in what it later makes the writer do (the data itself is local).
ResultTables collect_tables(const RunResults& res, const std::vector<std::unique_ptr<Analysis>>& analyses);

}  // namespace straggler::tables
