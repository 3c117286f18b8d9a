// The run's output files (HDF5, summary JSON) appear whole or not at all. Each is written under a
// temporary name beside its final path, ".NAME.tmp-HOST-PID", and all are renamed into place only
// when every one of them is complete. A failure removes them; SIGINT, SIGTERM and SIGHUP (what
// mpirun sends the others when one process dies) remove them before the process ends; a
// temporary file left by a SIGKILLed run is removed by the next run writing the same output on
// that host (its process is gone).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "transport.hpp"

namespace straggler {

// A failed write, raised on every process alike (so callers may return instead of aborting).
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OutputFiles {
 public:
  // Collective: agrees on the temporary names (process 0's host and pid), and on process 0
  // removes stale temporary files of the same outputs and arms the signal clean-up. "" = absent.
  OutputFiles(Transport& t, const std::string& h5_path, const std::string& summary_path);
  ~OutputFiles();  // removes whatever was not committed (process 0)
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  const std::string& h5_temp() const { return h5_temp_; }
  const std::string& summary_temp() const { return summary_temp_; }

  // Collective: `error` is process 0's ("" when its part succeeded). If every process passes "",
  // process 0 renames the files into place; otherwise (or if a rename fails) it removes them, and
  // every process throws OutputError with process 0's message.
  void commit(const std::string& error);

 private:
  void remove_temps();
  Transport& t_;
  std::string h5_, summary_, h5_temp_, summary_temp_;
  bool done_ = false;
};

// ".NAME.tmp-HOST-PID" beside `path` (HOST cut to letters, digits, '-' and '.').
std::string temp_path(const std::string& path, const std::string& host, int64_t pid);
// Removes ".NAME.tmp-HOST-PID" files beside `path` whose HOST is this host and whose process no
// longer exists. Returns how many.
int remove_stale_temps(const std::string& path);
// Bytes available to this user on the file system of `path`'s directory (-1: unknown).
int64_t free_bytes(const std::string& path);

}  // namespace straggler
