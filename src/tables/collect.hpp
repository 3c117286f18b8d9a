// The result tables of a run, assembled from RunResults (and its cross-rank results) by the
// declarations in this folder. Kept apart from the declarations: each analysis will produce its
// own tables.
#pragma once
#include "results.hpp"
#include "table.hpp"

namespace straggler::tables {

// Every table of docs/hdf5-layout.md, in writing order. Collective only in what it later makes the
// writer do (the data itself is local).
ResultTables collect_tables(const RunResults& res);

}  // namespace straggler::tables
