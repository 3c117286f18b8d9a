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

// The hidden argument that makes the binary read one scan and say whether it could
// (`straggler-scan --probe-scan-internal SCAN.h5`: exit 0, or 2 with the reason on stdout).
// load_scan runs it first in a child process, so that a file that crashes or stalls the HDF5
// library itself is refused in one line instead of taking the tool down with it.
inline constexpr const char* kProbeFlag = "--probe-scan-internal";
int probe_scan_main(const std::string& path);
// The binary that probes (main() sets /proc/self/exe, which answers kProbeFlag); unset, as in
// tests that link the library, scans are read without the probe.
void set_probe_executable(const std::string& exe);
// The same probe alone (for readers of one table, `scaling`): throws std::runtime_error saying why.
void probe_scan(const std::string& path);

// Throws std::runtime_error unless `f` is a straggler-scan output of the format this build reads.
void check_scan_format(const h5read::File& f);

// A saved scan rather than a run: a regular file with HDF5's signature (`scaling`, `compare`).
bool is_scan_file(const std::string& path);

}  // namespace straggler
