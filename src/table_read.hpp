// Reading a declared table back from an HDF5 file that write_hdf5 wrote: the inverse of the writer
// (src/h5_writer.cpp) for one TableSchema. Scalar, matrix and ragged (NAME + NAME_offsets)
// columns; a Summed table is one row of `width` values. Strings come back as the writer stored
// them (printable ASCII, at most h5::kMaxStringBytes). Throws std::runtime_error naming the file
// and the dataset when one is missing or unreadable.
#pragma once
#include <string>

#include "table.hpp"

namespace straggler::tables {

TableData read_table(const std::string& file, const TableSchema& schema);

// The rows of `table` as stored in `file` (Table<Row>::rows_of over read_table).
template <class Row>
std::vector<Row> read_rows(const std::string& file, const Table<Row>& table) {
  return table.rows_of(read_table(file, table.schema()));
}

}  // namespace straggler::tables
