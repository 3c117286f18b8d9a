// Parallel HDF5 output. Every process of `comm` calls write_hdf5 with its own rows; the file is
// written under a temporary name next to `path` and renamed to `path` only when complete.
#pragma once
#include <mpi.h>

#include <stdexcept>
#include <string>

#include "results.hpp"

namespace straggler {

// A failed write, raised on every process alike (so callers may return instead of aborting).
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Collective over comm. Throws OutputError (one line, naming the file) on failure, after
// removing the temporary file; the same outcome is reported on every process. Anything else
// (out of memory) propagates as is and is fatal to the job.
void write_hdf5(MPI_Comm comm, const std::string& path, const RunResults& local);

}  // namespace straggler
