// Parallel HDF5 output. Every process of `comm` calls write_hdf5 with its own rows; the file is
// written under a temporary name next to `path` and renamed to `path` only when complete.
#pragma once
#include <mpi.h>

#include <string>

#include "results.hpp"

namespace straggler {

// Collective over comm. Throws std::runtime_error (one line, naming the file) on failure, after
// removing the temporary file; the same outcome is reported on every process.
void write_hdf5(MPI_Comm comm, const std::string& path, const RunResults& local);

}  // namespace straggler
