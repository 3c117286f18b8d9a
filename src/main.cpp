// straggler-scan: entry point. Under an MPI launcher it runs on MPI; alone it runs on the local
// transport and never starts MPI (MPI_Init alone costs ~0.4 s). --help, --version and usage
// errors are answered before any of that.
#include <hdf5.h>
#include <mpi.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "driver.hpp"
#include "scan_load.hpp"
#include "hdf5_writer.hpp"
#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "transport.hpp"
#include "watchdog.hpp"

namespace {

// Exit status of one analysis (common/errors.hpp maps errors to statuses); a failure of one
// process only is the caller's to handle.
int analyse(straggler::Transport& t, const straggler::Options& opt, bool* internal_error) {
  try {
    return straggler::run_analysis(t, opt);
  } catch (const common::UsageError& e) {
    // Raised identically on every process (arguments, or broadcast from process 0).
    if (t.root()) std::cerr << "straggler-scan: " << e.what() << "\n";
    return common::code(common::exit_status_of(e));
  } catch (const common::OutputError& e) {
    // Raised on every process together: nothing is left waiting.
    if (t.root()) std::cerr << "straggler-scan: " << e.what() << "\n";
    return common::code(common::exit_status_of(e));
  } catch (const std::exception& e) {
    std::cerr << "straggler-scan: internal error";
    if (t.size() > 1) std::cerr << " on process " << t.rank();
    std::cerr << ": " << e.what() << "\n";
    *internal_error = true;
    return common::code(common::exit_status_of(e));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A file size limit (ulimit -f) then fails the write with "File too large", reported in one line
  // like any other write error, instead of killing the process with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  // HDF5 never tears itself down: not at exit, and (initialised before MPI) not in MPI_Finalize.
  // After a failed write (an I/O error, a full disk) its teardown closed the broken file again and
  // crashed (repro N2); every file is closed explicitly, and the system frees the rest.
  H5dont_atexit();
  H5open();
  // A child that reads one scan for load_scan (src/scan_load.hpp): no MPI, no options.
  if (argc == 3 && std::string(argv[1]) == straggler::kProbeFlag) return straggler::probe_scan_main(argv[2]);
  straggler::set_probe_executable("/proc/self/exe");
  const bool quiet_here = straggler::launcher_rank() != 0;  // one process prints usage errors
  straggler::Options opt;
  try {
    if (!straggler::parse_options(argc, argv, opt, quiet_here)) return 0;  // --help, --version
  } catch (const common::UsageError& e) {
    if (!quiet_here) std::cerr << "straggler-scan: " << e.what() << "\n";
    return common::code(common::exit_status_of(e));
  }
  if (!straggler::started_by_mpi_launcher()) {
    bool internal = false;
    auto local = straggler::local_transport();
    return analyse(*local, opt, &internal);
  }
  // HDF5 never uses MPI-IO's shared file pointers, yet Open MPI's default "sm" component maps a
  // backing file in its session folder at every open: with /tmp full that mapping ended the
  // process with SIGBUS (fuzz corpus n2_mpi_sharedfp_sigbus). "individual" opens nothing unless
  // shared pointers are used. A user's own choice stands.
  setenv("OMPI_MCA_io", "romio321", 0);
  common::note_launcher();  // outputs are committed only while it lives (common/atomic_file.hpp)
  // MPI_Init waits for every process: bounded too (--timeout).
  std::unique_ptr<straggler::Watchdog> watchdog;
  if (opt.timeout_s > 0) {
    watchdog = std::make_unique<straggler::Watchdog>(opt.timeout_s, straggler::launcher_rank());
    watchdog->arm("starting MPI");
  }
  MPI_Init(&argc, &argv);
  if (watchdog) watchdog->disarm();
  bool internal = false;
  auto mpi = straggler::mpi_transport(MPI_COMM_WORLD, opt.timeout_s, std::move(watchdog));
  const int status = analyse(*mpi, opt, &internal);
  // One process failing alone must not leave the others waiting in a collective: end the job.
  if (internal) MPI_Abort(MPI_COMM_WORLD, 1);
  mpi->finish();
  MPI_Finalize();
  mpi.reset();  // after MPI_Finalize: its watchdog bounds that call (--timeout)
  return status;
}
