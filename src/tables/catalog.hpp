// Every table a run writes, without data: the source of the column lists of docs/hdf5-layout.md.
#pragma once
#include <string>
#include <vector>

#include "table.hpp"

namespace straggler::tables {

std::vector<TableSchema> all_schemas();
// The column lists of the tables in group `prefix` and the groups below it (markdown), as
// docs/hdf5-layout.md holds them between `<!-- BEGIN GENERATED: prefix -->` and `<!-- END GENERATED -->`.
std::string layout_markdown(const std::string& prefix);
// The declared tables as JSON (path, distribution, columns with type and shape) with the reader's
// bounds: scripts/scan_tables.json, which scripts/scan_file.py checks a scan file against.
std::string tables_json();
// Whether `path` is `prefix` or a group below it.
bool under(const std::string& path, const std::string& prefix);

}  // namespace straggler::tables
