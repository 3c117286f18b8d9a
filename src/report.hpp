// The stdout report: what was read, per-rank highlights, what was skipped and why.
#pragma once
#include <ostream>

#include "options.hpp"
#include "rows.hpp"

namespace straggler {
void print_report(std::ostream& os, const RunSummaryInput& in, const Options& opt);
// One line per failed profile: "straggler-scan: FILE: problem".
void print_failures(std::ostream& os, const std::vector<FailureRow>& failures);
}
