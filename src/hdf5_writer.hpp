// Parallel HDF5 output. Every process calls write_hdf5 with its own rows; process 0 writes the
// tables every process holds. The file goes to a temporary path that OutputFiles renames into
// place once every output of the run is complete. The writer knows result tables (src/table.hpp)
// only, never the analyses that filled them.
#pragma once
#include <string>

#include "output_files.hpp"
#include "results.hpp"
#include "table.hpp"
#include "transport.hpp"

namespace straggler {

// Collective. Writes `tmp` (one group per table path, a dataset per column), first checking that
// its file system has room. Throws OutputError (one line, naming `path`, the final name) on
// failure, after removing `tmp`; the same outcome on every process. Anything else (out of memory)
// propagates as is and is fatal to the job.
void write_hdf5(Transport& t, const std::string& path, const std::string& tmp, const tables::ResultTables& tables);

}  // namespace straggler
