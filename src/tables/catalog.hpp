// Every declared table, without data: the source of the column lists of docs/hdf5-layout.md.
#pragma once
#include <string>
#include <vector>

#include "table.hpp"

namespace straggler::tables {

std::vector<TableSchema> all_schemas();
// The generated part of docs/hdf5-layout.md (markdown, one section per table).
std::string layout_markdown();

}  // namespace straggler::tables
