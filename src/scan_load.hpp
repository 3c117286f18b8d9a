// A scan read back from the HDF5 file it wrote (`straggler-scan report SCAN.h5`): the rows and the
// cross-rank results that the summary and the report are made from, restored from the declared
// tables (src/table_read.hpp) and their group attributes. The per-op tables are not read: nothing
// the report says needs them.
#pragma once
#include <string>

#include "driver.hpp"
#include "h5_read.hpp"

namespace straggler {

// Throws common::UsageError, one line naming the file: unreadable, not a straggler-scan file, or
// written with another format version (tables::kFormatVersion).
// The file is checked whole first (h5read::File: docs/hdf5-layout.md, "Reading a scan someone sent
// you"), so a hostile file is refused before any value is read.
Scan load_scan(const std::string& path);

// Throws std::runtime_error unless `f` is a straggler-scan output of the format this build reads.
void check_scan_format(const h5read::File& f);

// A saved scan rather than a run: a regular file with HDF5's signature (`scaling`, `compare`).
bool is_scan_file(const std::string& path);

}  // namespace straggler
