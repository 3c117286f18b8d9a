// Reading a declared table back from a scan file (h5read::File, which checked the file when it
// opened it): the inverse of the writer (src/h5_writer.cpp) for one TableSchema. Scalar, matrix
// and ragged (NAME + NAME_offsets) columns; a Summed table is one row of `width` values. Before
// any column is read, every column present must have the table's row count and each ragged
// column's offsets must fit its values (docs/hdf5-layout.md, rule 5). Strings come back
// printable. Throws std::runtime_error naming the dataset.
#pragma once
#include <string>

#include "h5_read.hpp"
#include "table.hpp"

namespace straggler::tables {

TableData read_table(const h5read::File& file, const TableSchema& schema);

// Rule 5 from the shapes alone, for a table that is not read: every column present has one row
// count, ragged offsets one more. Throws std::runtime_error naming the dataset.
void check_table_shape(const h5read::File& file, const TableSchema& schema);

// The rows of `table` as stored in `file` (Table<Row>::rows_of over read_table).
template <class Row>
std::vector<Row> read_rows(const h5read::File& file, const Table<Row>& table) {
  return table.rows_of(read_table(file, table.schema()));
}

}  // namespace straggler::tables
