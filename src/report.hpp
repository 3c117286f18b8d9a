// The stdout report: what was read, per-rank highlights, what was skipped and why.
#pragma once
#include <ostream>

#include "options.hpp"
#include "rows.hpp"

namespace straggler {
// The header, each analysis's section (RunSummaryInput::report_sections) by part, what was written.
void print_report(std::ostream& os, const RunSummaryInput& in, const Options& opt);
// The built-in analyses' sections (each is its analysis's Analysis::report).
std::string verdict_report(const RunSummaryInput& in);       // verdict: what is wrong, clocks, layout, root causes
std::string measurements_report(const RunSummaryInput& in);  // rank_metrics: iterations, GPU time, per rank
std::string inputs_report(const RunSummaryInput& in);        // run_inputs: the profiles skipped
// One line per failed profile: "straggler-scan: FILE: problem".
void print_failures(std::ostream& os, const std::vector<FailureRow>& failures);
// One failure as one printable line, naming its file once.
std::string failure_text(const FailureRow& f);
}
