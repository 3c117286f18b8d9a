#include "command_outputs.hpp"

#include <fstream>

#include "common/text.hpp"
#include "hdf5_writer.hpp"
#include "output_files.hpp"
#include "version.hpp"

namespace straggler {

void write_command_outputs(Transport& t, const Options& opt, tables::ResultTables out,
                           const std::function<std::string()>& summary) {
  OutputFiles files(t, opt.output, opt.summary);
  out.file_attributes = {{"tool", std::string("straggler-scan")}, {"version", std::string(kToolVersion)},
                         {"command_line", opt.command_line}, {"runs", opt.inputs}};
  write_hdf5(t, opt.output, files.h5_temp(), out);
  std::string error;
  if (t.root() && !opt.summary.empty()) {
    std::ofstream s(files.summary_temp(), std::ios::binary | std::ios::trunc);
    s << summary() << "\n";
    s.close();
    if (!s) error = common::printable(opt.summary) + ": cannot write the summary";
  }
  files.commit(error);
}

}  // namespace straggler
