// The run's output files (HDF5, summary JSON) appear whole or not at all, whatever the number of
// processes: they agree on process 0's temporary names (common/atomic_file.hpp: naming, signal
// clean-up, stale temporaries of dead runs), and all are renamed into place only when every one of
// them is complete on every process. A failure removes them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "transport.hpp"

namespace straggler {

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
  // every process throws common::OutputError with process 0's message.
  void commit(const std::string& error);

 private:
  void remove_temps();
  Transport& t_;
  std::string h5_, summary_, h5_temp_, summary_temp_;
  bool done_ = false;
};

}  // namespace straggler
