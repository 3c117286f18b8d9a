// Declared tables as JSON rows (the summary's view of a table): one object per row, its columns
// by name, the same keys as the HDF5 datasets. Used by the analyses that publish summary keys.
#pragma once
#include <functional>
#include <set>
#include <string>

#include "json_writer.hpp"
#include "table.hpp"

namespace straggler {

// How a declared table appears in the summary: its columns by name, less `omit`; a negative
// value in `null_if_negative` is null, in `omit_if_negative` absent; `extra(j, row)` adds keys the
// table does not hold.
struct JsonView {
  std::set<std::string> omit, null_if_negative, omit_if_negative;
  std::function<void(JsonWriter&, size_t)> extra = {};
};

// The rows of `t` as a JSON array, as `view` says.
void json_rows(JsonWriter& j, const tables::TableData& t, const JsonView& view = {});
// The same, as a whole value (JsonWriter::str()).
std::string json_rows(const tables::TableData& t, const JsonView& view = {});

}  // namespace straggler
