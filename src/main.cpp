// straggler-scan: entry point. Runs under mpirun or alone (a singleton MPI process).
#include <mpi.h>

#include <iostream>

#include "driver.hpp"
#include "hdf5_writer.hpp"
#include "ranks/discovery.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int status = 0;
  try {
    straggler::Options opt;
    if (straggler::parse_options(argc, argv, opt)) status = straggler::run_analysis(MPI_COMM_WORLD, opt);
  } catch (const ranks::UsageError& e) {
    // Raised identically on every process (arguments, or broadcast from process 0).
    if (me == 0) std::cerr << "straggler-scan: " << e.what() << "\n";
    status = 2;
  } catch (const straggler::OutputError& e) {
    // Raised on every process together: nothing is left waiting, no abort needed.
    if (me == 0) std::cerr << "straggler-scan: " << e.what() << "\n";
    status = 1;
  } catch (const std::exception& e) {
    // One process failing must not leave the others waiting in a collective: abort the job.
    std::cerr << "straggler-scan: internal error on process " << me << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
