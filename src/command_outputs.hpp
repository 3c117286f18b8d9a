// The outputs of a command over several runs (`scaling`, `compare`): its tables in one HDF5 file
// with the file attributes every such file carries, and its summary JSON, both complete or neither
// (OutputFiles). Collective.
#pragma once
#include <functional>
#include <string>

#include "options.hpp"
#include "table.hpp"
#include "transport.hpp"

namespace straggler {
// `summary` is called on process 0 only, and only when opt.summary names a file.
void write_command_outputs(Transport& t, const Options& opt, tables::ResultTables out,
                           const std::function<std::string()>& summary);
}  // namespace straggler
