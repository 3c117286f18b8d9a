// Declarations of the run-level tables, identical on every process: /inputs, /failures.
#pragma once
#include "results.hpp"
#include "table.hpp"

namespace straggler::tables {

const Table<InputFile>& inputs_table();
const Table<FailureRow>& failures_table();

}  // namespace straggler::tables
